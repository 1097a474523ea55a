"""The render stage: `kustomize build` of every overlay and bootstrap, batched per cluster."""
