"""The real Argo CD in the box (forge twin argocd): Redis, a Git server of the working tree, the
Argo CD components out of the cluster against the box's API server, the bootstrap docs/bootstrap.md
describes, and a wait until every Application is Synced and Healthy."""
