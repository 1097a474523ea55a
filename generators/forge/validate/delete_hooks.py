"""No forge Application carries a destructive delete hook.

Argo CD runs a chart's Helm `pre-delete`/`post-delete` hooks (and its own PreDelete/PostDelete
hooks) when the Application is deleted, e.g. when a component is switched off or renamed, or an
Application is recreated by hand. node-feature-discovery's default post-delete Job runs
`nfd-master -prune`: every forge.exa.ai/* label, the GPU taints and nvidia.com/mig.config vanish
from every node, and the GPU Operator then tears down the MIG layouts. So:

* `DeleteHooks` (a cluster plug-in, rendered and hydrated output alike): no object is a delete hook.
  A hook a chart renders unconditionally is listed in `REVIEWED_HOOKS` with what makes it
  harmless, checked on the same output: it is then a warning, and a failure again as soon as
  what it would destroy is there.
* `hook_switches` (the values check, with the upstream data): no chart value that turns a known
  delete hook on is on in our values merged over the chart's defaults (the hook itself only
  appears in hydrated output, which needs the charts downloaded).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forge.validate.failure import Failure
from forge.validate.objects import object_id
from forge.validate.values import _chart, coalesce

# Annotation -> the hook phases that run when the Application (or the Helm release) is deleted.
HOOK_ANNOTATIONS = {"helm.sh/hook": frozenset({"pre-delete", "post-delete"}),
                    "argocd.argoproj.io/hook": frozenset({"PreDelete", "PostDelete"})}

# Chart values that switch a delete hook on (dotted path in the chart, or in the subchart of the
# same name) -> what the hook does. Read from the pinned charts' templates.
HOOK_SWITCHES = {
    "postDeleteCleanup": "node-feature-discovery's post-delete Job (`nfd-master -prune`) strips every node's "
                         "NFD labels and taints (forge.exa.ai/*, the GPU taints, nvidia.com/mig.config)",
    "operator.cleanupCRD": "gpu-operator's pre-delete Job deletes its CRDs, and with them the ClusterPolicy and "
                           "every GPU operand",
}


# (kind, name) of a delete hook a pinned chart renders whatever its values -> (the kind of object
# it deletes, why it is harmless while the Application renders none of them). Read from the
# GPU Operator chart v26.7.0; a chart bump re-reads it (hydrate reports the hook again).
REVIEWED_HOOKS = {
    ("Job", "gpu-operator-cleanup-gpucluster"): (
        "GPUCluster", "the pinned gpu-operator chart renders this pre-delete Job unconditionally (no value turns it off); it "
                      "deletes only the chart-managed GPUCluster, and forge deploys none (gpuCluster.deployCR false)"),
}


def delete_phases(obj: dict[str, Any]) -> list[str]:
    """The delete-hook phases an object is annotated with ([] for none)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    found = []
    for key, phases in HOOK_ANNOTATIONS.items():
        found += [p.strip() for p in str(annotations.get(key) or "").split(",") if p.strip() in phases]
    return found


@dataclass
class DeleteHooks:
    """Plug-in: no object of any Application is a delete hook (module doc)."""

    def __call__(self, report: Any, cluster: str, component: str, objects: list[dict[str, Any]]) -> None:
        kinds = {obj.get("kind") for obj in objects}
        for obj in objects:
            phases = delete_phases(obj)
            reviewed = REVIEWED_HOOKS.get((obj.get("kind"), (obj.get("metadata") or {}).get("name")))
            if phases and reviewed and reviewed[0] not in kinds:
                report.warnings.append(Failure(cluster, component, object_id(obj), "metadata.annotations",
                                               f"reviewed {'/'.join(phases)} hook: {reviewed[1]}"))
            elif phases:
                report.failures.append(Failure(
                    cluster, component, object_id(obj), "metadata.annotations",
                    f"a {'/'.join(phases)} hook: Argo CD runs it when Application {component} is deleted; a forge "
                    "Application carries no delete hook (turn the chart's hook off in the component's values)"))


def _get(values: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(values, dict):
            return None
        values = values.get(part)
    return values


def hook_switches(values: dict[str, Any], chart_data_dir: Path) -> list[tuple[str, str]]:
    """(dotted key, reason) for each delete-hook switch on in `values` over the chart's defaults:
    the chart's own, and each subchart's our values configure (an untouched subchart may be off)."""
    chart = _chart(str(chart_data_dir))
    scopes = [("", coalesce(chart.defaults, values), chart.defaults)]
    for name, (sub_defaults, _) in chart.subcharts.items():
        if isinstance(values.get(name), dict) and values[name]:
            scopes.append((f"{name}.", coalesce(sub_defaults, values[name]), sub_defaults))
    problems = []
    for prefix, merged, defaults in scopes:
        for path, what in HOOK_SWITCHES.items():
            if _get(defaults, path) is None and _get(merged, path) is None:
                continue  # not this chart's switch
            if _get(merged, path) is True:
                problems.append((prefix + path, f"turns on a delete hook: {what} when the Application is deleted; "
                                                 "set it to false"))
    return problems
