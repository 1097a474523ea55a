"""The shape every component has. A component is a plug-in: one module, one `Component`
subclass, one line in `forge.components.COMPONENTS`.

What a component gives the pipeline:
- `values(cluster)`: Helm values for its pinned upstream chart (None when it has no chart);
- `manifests(cluster)`: extra Kubernetes objects for its overlay (custom resources, ConfigMaps);
- class attributes that the Argo CD bootstrap and validation read: namespace, sync wave, chart
  key in charts/versions.yaml, cluster-scoped kinds its chart creates (for the AppProject), and
  values keys the chart reads but documents only in comments (so the values check knows them).
Its hand-written `base/<name>/` holds what never varies: the Namespace with its Pod Security level.
Everything cluster-specific comes from the `ClusterModel`; a component never reads files.
"""
from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from forge.model import ClusterModel

# Sync waves of the child Applications: foundations (node labels, CRD-only pieces) first,
# then operators in dependency order, then what runs on top of them.
WAVE_FOUNDATION = -10
WAVE_MONITORING_CRDS = -5
WAVE_NETWORK = 0
WAVE_GPU = 10
WAVE_OPERATORS = 20
WAVE_STORAGE = 30
WAVE_WORKLOADS = 40
WAVE_OBSERVABILITY = 50

# Inside one Application: CRDs (wave 0 by default) before the custom resources that need them.
CR_SYNC_WAVE = "5"


class NoSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Component:
    name: ClassVar[str]  # folder under overlays/<cluster>/ and base/, Application suffix
    namespace: ClassVar[str]
    sync_wave: ClassVar[int]
    chart: ClassVar[str | None] = None  # key in charts/versions.yaml
    release_name: ClassVar[str | None] = None  # defaults to the component name
    server_side_apply: ClassVar[bool] = False  # large CRDs exceed client-side apply's annotation limit
    # Cluster-scoped kinds the component's chart and manifests create, as (group, kind).
    cluster_kinds: ClassVar[tuple[tuple[str, str], ...]] = ()
    # Values keys the chart reads but documents only in comments, as dotted paths.
    declared_values: ClassVar[frozenset[str]] = frozenset()
    Settings: ClassVar[type[BaseModel]] = NoSettings

    def enabled(self, cluster: ClusterModel) -> bool:
        return True

    def settings(self, cluster: ClusterModel) -> Any:
        return self.Settings.model_validate(cluster.settings_for(self.name))

    def values(self, cluster: ClusterModel) -> dict[str, Any] | None:
        return None

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        return []

    def runtime_crds(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        """CRDs of kinds `manifests()` uses that the component's operator installs itself at run
        time (so neither the chart nor the upstream data has them), as forge describes them.
        Only `forge validate` reads these; they are never written or synced."""
        return []

    def examples(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        """Objects for people to copy, written under overlays/<cluster>/<name>/examples/: not in
        the kustomization, so Argo CD never syncs them."""
        return []

    @property
    def module(self) -> str:
        return type(self).__module__


def custom_resource(obj: dict[str, Any]) -> dict[str, Any]:
    """Mark a custom resource to sync after the CRDs of its Application, which may not exist yet
    at dry-run time."""
    annotations = obj.setdefault("metadata", {}).setdefault("annotations", {})
    annotations["argocd.argoproj.io/sync-wave"] = CR_SYNC_WAVE
    annotations["argocd.argoproj.io/sync-options"] = "SkipDryRunOnMissingResource=true"
    return obj
