"""Workload PriorityClasses from the inventory, so urgent work can pre-empt batch work.

A class either pre-empts lower classes when the cluster is full (`PreemptLowerPriority`) or only
queues ahead of them (`Never`): batch preprocessing is `Never` and lowest, so anything may
pre-empt it and it pre-empts nothing. Flyte's projects name these classes (forge.components.flyte);
operators and node agents use Kubernetes' built-in system classes instead (SYSTEM_CLUSTER_CRITICAL,
SYSTEM_NODE_CRITICAL), which stand above every class here.
"""
from __future__ import annotations

from typing import Annotated, Any, Iterator, Literal, Sequence

from pydantic import Field

from forge.components import infra_priority
from forge.components.admission import serves_mutating
from forge.components.base import WAVE_FOUNDATION, Component
from forge.inventory.schema import Name, Strict
from forge.model.cluster import ClusterModel

SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"  # controllers the cluster needs (operators)
SYSTEM_NODE_CRITICAL = "system-node-critical"  # per-node agents (DaemonSets)
# Kubernetes refuses user classes above this value: higher ones are reserved for the system classes.
MAX_USER_PRIORITY = 1_000_000_000
# The node tests' pods (forge.components.node_tests.nccl): above every workload class, so no job
# pre-empts a running test (a killed test fails and alerts), and preemptionPolicy Never, so a test
# whose peer's GPUs are busy waits for them and never evicts the rank of a running job there. Not
# a workload class (no WorkloadPriorityClass, no project names it), not a system class (those pre-empt).
NODE_TEST_CLASS = "forge-node-test"
NODE_TEST_VALUE = MAX_USER_PRIORITY


class PriorityClassSpec(Strict):
    name: Name  # not `system-…`: a rule in Scheduling.check, so the block stays typed for Flyte's check
    value: Annotated[int, Field(ge=0, le=MAX_USER_PRIORITY)]
    # PreemptLowerPriority: may evict lower classes to fit; Never: waits its turn, evicts nobody.
    preemption: Literal["PreemptLowerPriority", "Never"]
    description: Annotated[str, Field(min_length=1)]
    global_default: bool = False  # the class of pods that name none (at most one)


class SchedulingSettings(Strict):
    priority_classes: Annotated[list[PriorityClassSpec], Field(min_length=1)]


class Scheduling(Component):
    name = "scheduling"
    # PriorityClasses are cluster-scoped; the namespace is the Application's destination and home
    # for a future queueing controller. Nothing runs in it today.
    namespace = "scheduling"
    sync_wave = WAVE_FOUNDATION  # before any component whose pods name a class
    # With the classes, the admission policy that gives infrastructure pods no chart value
    # reaches their priority (forge.components.infra_priority).
    cluster_kinds = (("scheduling.k8s.io", "PriorityClass"), *infra_priority.KINDS)
    Settings = SchedulingSettings

    def enabled(self, cluster: ClusterModel) -> bool:
        return self.name in cluster.component_settings

    def check(self, loaded, settings: SchedulingSettings, given) -> Iterator:
        at = ("components", self.name, "priority_classes")
        first: dict[str, int] = {}
        defaults: list[int] = []
        for i, spec in enumerate(settings.priority_classes):
            if spec.name.startswith("system-"):
                yield loaded.problem(at + (i, "name"), f"'{spec.name}': the 'system-' prefix is reserved for Kubernetes' own classes")
            if spec.name in first:
                yield loaded.problem(at + (i, "name"), f"priority class '{spec.name}' defined twice (first at line {loaded.line_of(at + (first[spec.name],))})")
            first.setdefault(spec.name, i)
            if spec.global_default:
                defaults.append(i)
            if spec.name == NODE_TEST_CLASS or spec.value >= NODE_TEST_VALUE:
                yield loaded.problem(at + (i, "name" if spec.name == NODE_TEST_CLASS else "value"),
                                     f"'{spec.name}' ({spec.value}): the name {NODE_TEST_CLASS} and the value {NODE_TEST_VALUE} are the node "
                                     f"tests' class, which must rank above every workload class: use another name and a value below {NODE_TEST_VALUE}")
        for i in defaults[1:]:
            yield loaded.problem(at + (i, "global_default"), f"only one class may be the global default; '{settings.priority_classes[defaults[0]].name}' already is")

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        return self.fleet_manifests(cluster, ())

    def fleet_manifests(self, cluster: ClusterModel, components: Sequence[Component]) -> list[dict[str, Any]]:
        """The classes, and the infrastructure-priority policy over the namespaces of every
        component whose chart cannot name a class (`priority_exception`)."""
        classes = self.settings(cluster).priority_classes
        default = next((c.name for c in classes if c.global_default), None)
        namespaces = sorted({c.namespace for c in components if c.priority_exception})
        if not serves_mutating(cluster):  # EKS: those pods stay priority exceptions (docs/security.md)
            namespaces = []
        return [priority_class(spec) for spec in classes] + [node_test_class()] + infra_priority.objects(namespaces, default)


def priority_class(spec: PriorityClassSpec) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": spec.name},
        "value": spec.value,
        "globalDefault": spec.global_default,
        "preemptionPolicy": spec.preemption,
        "description": spec.description,
    }


def node_test_class() -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": NODE_TEST_CLASS},
            "value": NODE_TEST_VALUE, "globalDefault": False, "preemptionPolicy": "Never",
            "description": "Node tests: above every workload class, pre-empt nobody (a test waits for its peer's GPUs)"}


def priority_class_names(settings: SchedulingSettings | None) -> list[str]:
    """Class names the scheduling settings declare (none without the block)."""
    return [c.name for c in settings.priority_classes] if settings is not None else []
