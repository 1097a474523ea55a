"""The rollout across clusters (docs/rollout.md): rings in order (clusters/rings.yaml), each
ring's Applications on a git ref forge owns, `forge promote` moving a ring's ref once the ring
before it passed its gates, read from Argo CD and Prometheus; the central Argo CD's
ApplicationSets. Nothing before the CLI imports this package."""
