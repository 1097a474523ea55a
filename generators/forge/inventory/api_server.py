"""Rules of `cluster.api_server`: what the cluster's API server serves beyond the upstream
defaults (forge.facts.kube_apis). A managed control plane takes no flags; on premises, every
runtime-config entry is a built-in API the cluster's Kubernetes version has and leaves off."""
from __future__ import annotations

from typing import Iterator

from forge.facts import kube_apis
from forge.facts.kube_apis import Served
from forge.errors import Problem
from forge.inventory.located import LoadedInventory


def api_server_rules(loaded: LoadedInventory) -> Iterator[Problem]:
    cluster = loaded.inventory.cluster
    api = cluster.api_server
    if cluster.cloud and (api.feature_gates or api.runtime_config):
        why = kube_apis.MANAGED_DEFAULTS[cluster.cloud.provider]
        yield loaded.problem(("cluster", "api_server"), f"a cloud cluster's control plane is the provider's: {why}; "
                                                         "remove cluster.api_server")
        return
    version = cluster.kubernetes_version
    if (api.feature_gates or api.runtime_config) and version not in kube_apis.DEFAULT_ON:
        yield loaded.problem(("cluster", "api_server"), f"forge knows what Kubernetes {version}'s API server serves only for "
                                                         f"{', '.join(sorted(kube_apis.DEFAULT_ON))}")
        return
    off = kube_apis.OFF_BY_DEFAULT.get(version, frozenset())
    seen: set[str] = set()
    for i, gv in enumerate(api.runtime_config):
        at = ("cluster", "api_server", "runtime_config", i)
        if gv in seen:
            yield loaded.problem(at, f"{gv} is listed twice")
        elif gv in kube_apis.DEFAULT_ON[version]:
            yield loaded.problem(at, f"{gv} is on by default in Kubernetes {version}: list only what the cluster turns on")
        elif gv not in off:
            yield loaded.problem(at, f"{gv} is not a built-in API of Kubernetes {version} that is off by default; "
                                     f"expected one of: {', '.join(sorted(off))}")
        seen.add(gv)
    for i, gate in enumerate(api.feature_gates):
        if api.feature_gates.index(gate) != i:
            yield loaded.problem(("cluster", "api_server", "feature_gates", i), f"{gate} is listed twice")


def served_apis(loaded: LoadedInventory) -> Served:
    """What the API server serves, and where the inventory says it: cluster.api_server on premises
    (the upstream defaults without it), cluster.cloud for a managed control plane."""
    cluster = loaded.inventory.cluster
    at = ("cluster", "api_server") if "api_server" in cluster.model_fields_set else (
        ("cluster", "cloud") if cluster.cloud else ("cluster", "kubernetes_version"))
    what = ".".join(at) + (f" ({kube_apis.MANAGED_DEFAULTS[cluster.cloud.provider]})" if cluster.cloud else "")
    return Served(cluster.kubernetes_version, frozenset(cluster.api_server.runtime_config),
                  frozenset(cluster.api_server.feature_gates), f"{loaded.file}:{loaded.line_of(at)}: {what}")
