"""Policies over one cluster's whole output, rendered (`forge validate`) or hydrated (`forge validate
--hydrated`): engine plug-ins (forge.validate.engine.ComponentCheck) that need more than one object.

* Infrastructure is never pre-empted (`PriorityFloor`): every pod template in an infrastructure
  namespace (a component's own namespace, and kube-system; not Flyte's project namespaces, where
  the workloads run) names a PriorityClass whose value is above every workload class (the
  PriorityClasses the cluster ships: the scheduling component's). A pod naming none gets the
  global default, a workload class, so pre-emptible. A component whose chart cannot set a class
  declares why (`Component.priority_exception`): its chart's pods are then listed as warnings,
  never passed in silence; forge's own objects in it are still checked.
* No CRD is ever pruned automatically (`CrdPrune`): a CRD sits in an Application that never prunes
  automatically (`automated.prune: false`, or the Application-wide sync option `Prune=false`), or
  carries the sync option `Prune=false` (or `Prune=confirm`) itself. Deleting a CRD deletes every
  object of its kind (every ClusterPolicy, NicClusterPolicy, PyTorchJob).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from forge.components.scheduling import NODE_TEST_CLASS
from forge.validate.delete_hooks import DeleteHooks
from forge.validate.failure import Failure
from forge.validate.objects import object_id

# Kubernetes' built-in classes (not objects in any output): above every user class.
SYSTEM_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
_NO_PRUNE = {"Prune=false", "Prune=confirm"}

_TEMPLATE = ("spec", "template", "spec")
# Where each kind keeps the pod spec its pods are made from. The Prometheus Operator's resources
# carry the class their StatefulSets' pods get. A PodTemplate runs nothing itself: whoever uses it
# runs workloads (Flyte's default template, in Flyte's namespace, shapes task pods in the project
# namespaces), so it is not an infrastructure pod.
POD_SPECS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",), "Deployment": _TEMPLATE, "StatefulSet": _TEMPLATE,
    "DaemonSet": _TEMPLATE, "ReplicaSet": _TEMPLATE, "ReplicationController": _TEMPLATE, "Job": _TEMPLATE,
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "Prometheus": ("spec",), "Alertmanager": ("spec",), "ThanosRuler": ("spec",), "PrometheusAgent": ("spec",),
}
_OPERATED = {"Prometheus", "Alertmanager", "ThanosRuler", "PrometheusAgent"}


def pod_spec(obj: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(dotted path, pod spec) of an object that makes pods, or None."""
    kind = obj.get("kind")
    if kind not in POD_SPECS or (kind in _OPERATED and not str(obj.get("apiVersion", "")).startswith("monitoring.coreos.com/")):
        return None
    node: Any = obj
    for part in POD_SPECS[kind]:
        node = node.get(part) if isinstance(node, dict) else None
    return (".".join(POD_SPECS[kind]), node) if isinstance(node, dict) else None


def workload_classes(objects: Iterable[dict[str, Any]]) -> dict[str, int]:
    """The PriorityClasses a cluster's output ships (forge ships only the scheduling component's),
    but the node tests' class, which ranks above the workload classes on purpose."""
    return {o["metadata"]["name"]: int(o.get("value", 0)) for o in objects
            if o.get("kind") == "PriorityClass" and isinstance(o.get("metadata"), dict) and "name" in o["metadata"]
            and o["metadata"]["name"] != NODE_TEST_CLASS}


def _sync_options(text: Any) -> set[str]:
    return {part.strip() for part in str(text or "").split(",") if part.strip()}


@dataclass
class PriorityFloor:
    """Plug-in: pods in infrastructure namespaces rank above every workload class (module doc)."""

    classes: Mapping[str, int]  # workload classes by name
    infra_namespaces: frozenset[str]
    home: Mapping[str, str] = field(default_factory=dict)  # component -> its namespace (the Application's destination)
    exceptions: Mapping[str, str] = field(default_factory=dict)  # component -> why its chart's pods name no class
    own_labels: Mapping[str, str] = field(default_factory=dict)  # forge's labels: objects forge wrote
    # Namespaces where forge's MutatingAdmissionPolicy gives pods that name no class a system class.
    mutated: frozenset[str] = frozenset()

    def problem(self, obj: dict[str, Any], component: str) -> tuple[str, str] | None:
        found = pod_spec(obj)
        namespace = (obj.get("metadata") or {}).get("namespace") or self.home.get(component)
        if found is None or namespace not in self.infra_namespaces:
            return None
        path, spec = found
        floor = max(self.classes.values(), default=0)
        name = spec.get("priorityClassName")
        if not name and namespace in self.mutated:
            return None  # the admission policy sets a system class on every such pod (forge.components.infra_priority)
        if not name:
            default = next((n for n, v in self.classes.items() if v == floor), None)
            return (f"{path}.priorityClassName", f"no priorityClassName in infrastructure namespace '{namespace}': its pods get the "
                                                  f"global default class, pre-emptible by workload classes up to {default or 'none'} "
                                                  f"({floor}); name system-cluster-critical or system-node-critical")
        value = SYSTEM_CLASSES.get(name, self.classes.get(name))
        if value is None:
            return (f"{path}.priorityClassName", f"PriorityClass '{name}' is neither a system class nor one the cluster defines")
        if value <= floor:
            return (f"{path}.priorityClassName", f"PriorityClass '{name}' ({value}) is not above every workload class "
                                                  f"(highest {floor}): workloads may pre-empt infrastructure in '{namespace}'")
        return None

    def __call__(self, report: Any, cluster: str, component: str, objects: list[dict[str, Any]]) -> None:
        for obj in objects:
            found = self.problem(obj, component)
            if found is None:
                continue
            labels = (obj.get("metadata") or {}).get("labels") or {}
            ours = bool(self.own_labels) and all(labels.get(k) == v for k, v in self.own_labels.items())
            reason = self.exceptions.get(component)
            if reason and not ours:
                report.warnings.append(Failure(cluster, component, object_id(obj), found[0], f"priority exception: {reason}"))
            else:
                report.failures.append(Failure(cluster, component, object_id(obj), *found))


def prunes_automatically(app: Mapping[str, Any] | None) -> bool:
    """True when Argo CD prunes this Application's objects on its own (automated sync with prune,
    and no Application-wide Prune=false)."""
    policy = ((app or {}).get("spec") or {}).get("syncPolicy") or {}
    automated = policy.get("automated")
    if not isinstance(automated, dict) or not automated.get("prune"):
        return False
    return not (_NO_PRUNE & {o.strip() for o in policy.get("syncOptions") or []})


@dataclass
class CrdPrune:
    """Plug-in: no CRD can be pruned automatically (module doc)."""

    applications: Mapping[str, Mapping[str, Any]]  # component -> its Argo CD Application

    def __call__(self, report: Any, cluster: str, component: str, objects: list[dict[str, Any]]) -> None:
        app = self.applications.get(component)
        if app is None or not prunes_automatically(app):
            return
        for obj in objects:
            if obj.get("kind") != "CustomResourceDefinition":
                continue
            annotations = (obj.get("metadata") or {}).get("annotations") or {}
            if _NO_PRUNE & _sync_options(annotations.get(SYNC_OPTIONS)):
                continue
            report.failures.append(Failure(
                cluster, component, object_id(obj), f"metadata.annotations.{SYNC_OPTIONS}",
                f"CRD in Application {app['metadata']['name']}, which prunes automatically, without Prune=false: a release "
                "that drops it would delete every object of its kind (annotate it, or turn the Application's pruning off)"))


PRIORITY_POLICY = "forge-infrastructure-priority"  # forge.components.infra_priority.POLICY


def mutated_namespaces(objects: Iterable[dict[str, Any]]) -> frozenset[str]:
    """Namespaces whose class-less pods forge's infrastructure-priority policy mutates: the policy
    and its binding (selecting namespaces by name) are both in the output."""
    policy, bound = False, frozenset()
    for o in objects:
        if (o.get("metadata") or {}).get("name") != PRIORITY_POLICY:
            continue
        if o.get("kind") == "MutatingAdmissionPolicy" and (o.get("spec") or {}).get("failurePolicy") == "Fail":
            policy = True
        elif o.get("kind") == "MutatingAdmissionPolicyBinding" and (o.get("spec") or {}).get("policyName") == PRIORITY_POLICY:
            selector = ((o["spec"].get("matchResources") or {}).get("namespaceSelector") or {})
            bound = frozenset(v for e in selector.get("matchExpressions") or [] if e.get("key") == "kubernetes.io/metadata.name"
                              and e.get("operator") == "In" for v in e.get("values") or [])
    return bound if policy else frozenset()


def cluster_plugins(objects: Mapping[str, Sequence[dict[str, Any]]], applications: Mapping[str, Mapping[str, Any]],
                    components: Sequence[Any], own_labels: Mapping[str, str]) -> list[Any]:
    """The plug-ins for one cluster: `objects` by component (all of its output, for the workload
    classes), `applications` by component, `components` those the cluster runs."""
    classes = workload_classes(o for objs in objects.values() for o in objs)
    infra = frozenset({c.namespace for c in components} | {"kube-system"})
    return [
        PriorityFloor(classes, infra, {c.name: c.namespace for c in components},
                      {c.name: c.priority_exception for c in components if c.priority_exception}, own_labels,
                      mutated_namespaces(o for objs in objects.values() for o in objs)),
        CrdPrune(applications),
        DeleteHooks(),
    ]
