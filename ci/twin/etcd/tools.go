//go:build tools

// Package tools names etcd's main package, go.etcd.io/etcd/server/v3, so that `go build` of it
// from this module resolves the versions pinned in go.mod (forge.twin.binaries builds it; nothing
// here is forge's own code).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
