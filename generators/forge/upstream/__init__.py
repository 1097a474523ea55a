"""Upstream fidelity: the chart lock and cache, `forge hydrate` (helm template exactly as Argo CD
renders each component) and the checks on the hydrated output (`forge validate --hydrated`)."""
