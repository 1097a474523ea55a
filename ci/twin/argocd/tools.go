//go:build tools

// Package tools names Argo CD's main package, github.com/argoproj/argo-cd/v3/cmd, so that `go build`
// of it from this module resolves the versions pinned in go.mod (forge.twin.binaries builds it;
// nothing here is forge's own code).
package tools

import (
	_ "github.com/argoproj/argo-cd/v3/cmd"
)
