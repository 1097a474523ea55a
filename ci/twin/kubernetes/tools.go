//go:build tools

// Package tools names the kube-apiserver, kube-scheduler and kube-controller-manager commands of
// k8s.io/kubernetes, so that `go build` of them from this module resolves the versions pinned in
// go.mod (forge.twin.binaries builds them; nothing here is forge's own code).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
