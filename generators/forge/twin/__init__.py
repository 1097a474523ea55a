"""The fleet in a box: a throw-away control plane made of the real upstream programs, the
inventory's nodes, and forge's output applied the way Argo CD applies it, so that what the
controllers *do* with that output can be watched and asserted.

Real: etcd (built from the Go module go.etcd.io/etcd/server/v3), kube-apiserver, kube-scheduler
and kube-controller-manager (built from the Go module k8s.io/kubernetes), the Kueue controller and the Kubeflow
training-operator at the versions forge deploys (built from their Go modules), and kwok, which
plays each node's kubelet (it keeps the nodes Ready and marks bound pods Running), and cyclonus's
NetworkPolicy engine, which judges the flows a scenario states. Nothing here runs a container.

Stages, in the order they run (each module imports only the ones above it and forge's earlier
stages; nothing outside this package imports it):
- `pins`, `binaries`: what to build and the cache outside the repo it is built into;
- `pki`, `processes`, `box`: certificates, the processes and the box that owns them;
- `kube`: a small client of the API server (server-side apply, strict field validation);
- `nodes`, `sync`: the inventory's Node objects, and forge's output applied in Argo CD's order;
- `flows`: the flows a step states and the NetworkPolicy engine's verdicts on them;
- `scenario`, `submit`, `peers`, `run`: the seed's workloads as data, submitted as Flyte would,
  a flow's representative pods, judged;
- `upgrade`: the base revision's output, then the working tree's: what the server refuses;
- `cli`: `forge twin up|apply|run|upgrade|down|status`.
"""
