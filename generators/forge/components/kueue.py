"""Kueue (chart kueue 0.19.2): job queueing with all-or-nothing admission, borrowing between
projects, fair sharing and priorities, in front of the kube-scheduler.

A job (PyTorchJob, MPIJob, RayJob, RayCluster, batch Job or plain Pod) that names a LocalQueue
(label kueue.x-k8s.io/queue-name) is created suspended (pods: scheduling-gated); Kueue admits it
when the quota of its ClusterQueue covers ALL its pods at once, then unsuspends it. So two
16-node jobs never each hold half their GPUs, and pre-emption evicts whole jobs.

What forge writes (cluster-scoped; LocalQueues are Flyte's, in its project namespaces):
- a ResourceFlavor per GPU pool (forge.model.capacity: GPU model x MIG layout), selecting its nodes by
  the labels node-feature-discovery sets from the inventory, with the pool's taints as
  tolerations (added to admitted pods) and the Topology below;
- a Topology `racks` (levels forge.exa.ai/rack, kubernetes.io/hostname) for topology-aware
  placement: a job asking for `kueue.x-k8s.io/podset-required-topology: forge.exa.ai/rack` lands
  in one rack or waits;
- a ClusterQueue per Flyte project, all in one cohort, quotas per flavor and resource from
  forge.model.queues; a project whose PriorityClass never pre-empts gets a queue that never pre-empts;
- a WorkloadPriorityClass per PriorityClass of components.scheduling (same name and value), so a
  job can set its queue priority by label (`kueue.x-k8s.io/priority-class`); without the label
  Kueue takes the priority of the pods' PriorityClass. System classes are never mapped.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import yaml

from forge.model.capacity import Capacity, capacity, quantity
from forge.components import network
from forge.components.base import RBAC_NAMESPACED, WORKLOAD_KINDS, WAVE_KUEUE, Component, Contains, Expected, custom_resource
from forge.components.driver_upgrades import queue_stop_policy
from forge.components import kueue_cloud, multikueue
from forge.components.kueue_checks import FLYTE, RACK_LABEL, check_kueue
from forge.components.multikueue import CloudQueues
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL, PriorityClassSpec, Scheduling
from forge.model.cluster import ClusterModel
from forge.model.queues import API, FLYTE_PROJECT_LABEL, KueueSettings, ProjectQuotas, pre_emptible_projects, project_quotas, project_ranks
from forge.model.secrets import SecretUse

NAMESPACE = "kueue-system"  # the chart's CRDs name their conversion webhook's Service there
RELEASE = "kueue"
TOPOLOGY = "racks"
HOSTNAME_LABEL = "kubernetes.io/hostname"  # set by the kubelet: the lowest level places pods on nodes
# The chart's default integrations plus the Kubeflow v1 PyTorchJob (off by default in 0.19.2):
# Flyte's PyTorch plugin creates kubeflow.org/v1 PyTorchJobs (training-operator v1.9.4).
FRAMEWORKS = (
    "batch/job", "kubeflow.org/mpijob", "kubeflow.org/pytorchjob", "ray.io/rayjob", "ray.io/rayservice",
    "ray.io/raycluster", "jobset.x-k8s.io/jobset", "workload.codeflare.dev/appwrapper",
    "trainer.kubeflow.org/trainjob", "pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset",
)
# Kueue's internal certificate management writes these at run time: Argo CD must leave them be.
WEBHOOK_SECRET = "kueue-webhook-server-cert"
WEBHOOK_PORT = 9443  # its admission and CRD conversion webhooks: the API server calls them for every job
METRICS_PORT = 8443
# The visibility API server (pending workloads): the chart always registers its APIService, and the
# API server proxies to this port (the chart's visibility Service, 443 -> 8082). Unreachable, the
# APIService turns Unavailable and aggregated discovery fails: namespace deletion hangs.
VISIBILITY_PORT = 8082


EXCLUDED_RESOURCE_PREFIXES = ("ephemeral-storage", "hugepages-")


def frameworks(settings: KueueSettings) -> list[str]:
    """The integrations: FRAMEWORKS, less on a MultiKueue manager those no worker serves."""
    return [f for f in FRAMEWORKS if not (settings.burst and f in multikueue.UNSERVED_FRAMEWORKS)]


def manager_config(settings: KueueSettings, pods_ready_minutes: int) -> dict[str, Any]:
    """Kueue's Configuration: the chart's defaults (health, metrics, webhook, leader election,
    concurrency, client rates) kept, plus what forge needs (a MultiKueue manager: its section).
    `pods_ready_minutes`: the cluster's waitForPodsReady timeout (KueueFacts.pods_ready_minutes)."""
    burst = {"multiKueue": dict(multikueue.MANAGER_CONFIG)} if settings.burst else {}
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        # Per-queue, per-flavor usage and quota series (the queues dashboard, forge.observability.dashboards).
        "metrics": {"bindAddress": f":{METRICS_PORT}", "enableClusterQueueResources": True},
        "webhook": {"port": WEBHOOK_PORT},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {"groupKindConcurrency": {
            "Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10, "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5, "ResourceFlavor.kueue.x-k8s.io": 1}},
        "clientConnection": {"qps": 300, "burst": 500},
        # Pod-based integrations (and their webhooks) only in Flyte's project namespaces: the
        # operators' and agents' pods elsewhere never wait on Kueue, even while it is down.
        "managedJobsNamespaceSelector": {"matchExpressions": [{"key": FLYTE_PROJECT_LABEL, "operator": "Exists"}]},
        # All-or-nothing at run time as well: an admitted job whose pods are not all ready in time
        # (an image that cannot be pulled, a node lost) is evicted and requeued with back-off.
        "waitForPodsReady": {
            "timeout": f"{pods_ready_minutes}m",
            "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600},
        },
        "integrations": {"frameworks": frameworks(settings)},
        # What tasks may request beyond the queues' covered resources: Kueue 0.19 never admits a
        # workload asking for a resource no ClusterQueue covers, so such a task waited for ever.
        # Node-local scratch (ephemeral-storage) and huge pages are the kubelet's to bound per
        # node, not a shared quota: Kueue leaves them out of its accounting.
        "resources": {"excludeResourcePrefixes": list(EXCLUDED_RESOURCE_PREFIXES)},
        # Fair sharing on (its presence enables it): borrowed quota goes to the queue with the
        # lowest share, and pre-emption between queues of the cohort follows the shares.
        "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]},
        **burst,
    }


class Kueue(Component):
    name = "kueue"
    namespace = NAMESPACE
    other_namespaces = ("kube-system",)  # the chart binds the visibility API's reader role there
    # After the training-operator and KubeRay (their CRDs are there when Kueue sets up those
    # integrations) and before Flyte (its LocalQueues need Kueue's CRDs, its jobs Kueue's webhooks).
    sync_wave = WAVE_KUEUE
    # The chart's webhook Secret, and with our values (enablePrometheus, the manager's
    # podDisruptionBudget) its ServiceMonitor and PodDisruptionBudget.
    namespaced_kinds = (*WORKLOAD_KINDS, *RBAC_NAMESPACED, ("", "Secret"),
                        ("monitoring.coreos.com", "ServiceMonitor"), ("policy", "PodDisruptionBudget"))
    chart = "kueue"
    release_name = RELEASE
    server_side_apply = True  # the Workload CRD embeds pod templates: too large for client-side apply
    crd_groups = ("kueue.x-k8s.io",)
    cluster_kinds = (
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("apiregistration.k8s.io", "APIService"),  # the visibility API (pending workloads)
        ("kueue.x-k8s.io", "ResourceFlavor"),
        ("kueue.x-k8s.io", "ClusterQueue"),
        ("kueue.x-k8s.io", "Topology"),
        ("kueue.x-k8s.io", "WorkloadPriorityClass"),
        # A MultiKueue manager's (forge.components.multikueue)
        ("kueue.x-k8s.io", "AdmissionCheck"),
        ("kueue.x-k8s.io", "MultiKueueConfig"),
        ("kueue.x-k8s.io", "MultiKueueCluster"),
    )
    ignore_differences = (
        {"group": "", "kind": "Secret", "name": WEBHOOK_SECRET, "namespace": NAMESPACE, "jsonPointers": ["/data"]},
        {"group": "admissionregistration.k8s.io", "kind": "MutatingWebhookConfiguration",
         "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},
        {"group": "admissionregistration.k8s.io", "kind": "ValidatingWebhookConfiguration",
         "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},
        {"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition",
         "jqPathExpressions": [".spec.conversion.webhook.clientConfig.caBundle"]},
        {"group": "apiregistration.k8s.io", "kind": "APIService", "jsonPointers": ["/spec/caBundle"]},
    )
    inventory_values = frozenset({"managerConfig.controllerManagerConfigYaml"})
    Settings = KueueSettings
    # Only Argo CD's automated pruning is off: the chart templates its CRDs with no annotations value,
    # so they cannot carry Prune=false (see forge.validate.cluster_policies).
    prune = False

    def enabled(self, cluster: ClusterModel) -> bool:
        return self.name in cluster.component_settings

    def check(self, loaded, settings: KueueSettings, given) -> Iterator:
        return check_kueue(loaded, settings, given)

    def derive_facts(self, cluster: ClusterModel) -> KueueFacts:
        s: KueueSettings = self.settings(cluster)
        cap = capacity(cluster)  # forge.model.capacity: the same arithmetic Flyte's quotas use
        flyte = cluster.component_settings[FLYTE]
        classes = _scheduling_classes(cluster)
        policy = {c.name: c.preemption == "PreemptLowerPriority" for c in classes}
        mapped = classes if s.priority_classes is None else [c for c in classes if c.name in s.priority_classes]
        cloud = multikueue.cloud_queues(cluster.linked[s.burst.cluster], [p.name for p in flyte.projects]) if s.burst else None
        burst = cluster.linked[s.burst.cluster].component_settings[self.name] if s.burst else None
        ready = kueue_cloud.manager_pods_ready_minutes(kueue_cloud.pods_ready_minutes(s, cluster.cloud is not None), burst)
        shares = [(p.name, p.share_percent) for p in flyte.projects]
        batch = pre_emptible_projects(s, shares, project_ranks(flyte, cluster.component_settings.get(Scheduling.name)))
        return KueueFacts(cap, tuple(project_quotas(cap, shares, s, batch)),
                          tuple(mapped), {p.name: policy.get(p.priority_class, True) for p in flyte.projects}, cloud, ready,
                          batch)

    def secrets(self, cluster: ClusterModel) -> list[SecretUse]:
        cloud = self.facts(cluster).cloud
        return [multikueue.secret_use(cloud, self.namespace)] if cloud else []

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        return (network.webhook([WEBHOOK_PORT]), network.scrape([METRICS_PORT]),
                network.Allow("api-server-visibility", (VISIBILITY_PORT,), anywhere=True))

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        s: KueueSettings = self.settings(cluster)
        return {
            # The chart's ServiceMonitor for Kueue's metrics (queues, pending and inadmissible
            # workloads: forge.observability.platform_rules).
            "enablePrometheus": True,
            "controllerManager": {
                "manager": {"priorityClassName": SYSTEM_CLUSTER_CRITICAL},
                # Two replicas: its webhooks admit every job; one serves while the other restarts.
                "replicas": 2,
                "podDisruptionBudget": {"enabled": True},
                "nodeSelector": cluster.system_node_selector,
                "tolerations": cluster.system_tolerations,
            },
            "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(manager_config(s, self.facts(cluster).pods_ready_minutes), sort_keys=False)},
        }

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        s: KueueSettings = self.settings(cluster)
        pod = ("spec", "template", "spec")
        deployment = ("Deployment", "kueue-controller-manager")
        config = ("ConfigMap", "kueue-manager-config", ("data", "controller_manager_config.yaml"))
        return [
            Expected(*config[:2], (*config[2], "integrations", "frameworks"), Contains(*frameworks(s))),
            Expected(*config[:2], (*config[2], "fairSharing"), manager_config(s, self.facts(cluster).pods_ready_minutes)["fairSharing"]),
            Expected(*deployment, (*pod, "priorityClassName"), SYSTEM_CLUSTER_CRITICAL),
            Expected(*deployment, (*pod, "nodeSelector"), cluster.system_node_selector),
        ]

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        s: KueueSettings = self.settings(cluster)
        facts: KueueFacts = self.facts(cluster)
        cap = facts.capacity
        placed = any(kueue_cloud.uses_topology(p, s) for p in cap.pools)  # no flavor to place by racks: no Topology
        objs = [topology()] * placed + [resource_flavor(cluster, cap, p.flavor, s) for p in cap.pools]
        objs += [cluster_queue(q, cap, s, facts.preempts[q.project], queue_stop_policy(cluster), q.project in facts.pre_emptible)
                 for q in facts.quotas]
        objs += [workload_priority_class(c) for c in facts.classes]
        if facts.cloud:  # the MultiKueue manager's side of the burst link
            objs += cloud_objects(facts.cloud, s)
        objs = [custom_resource(o) for o in objs]
        return objs + (multikueue.worker_objects(self.namespace) if cluster.cloud else [])  # a MultiKueue worker


# ---- what the objects are made of -----------------------------------------------------------------

@dataclass(frozen=True)
class KueueFacts:
    capacity: Capacity
    quotas: tuple[ProjectQuotas, ...]  # one per Flyte project, in its order
    classes: tuple[PriorityClassSpec, ...]  # the PriorityClasses that get a WorkloadPriorityClass
    preempts: dict[str, bool]  # project -> whether its PriorityClass may pre-empt
    cloud: CloudQueues | None = None  # the burst cluster's queues, on its MultiKueue manager
    pods_ready_minutes: int = kueue_cloud.PODS_READY_MINUTES  # waitForPodsReady (forge.components.kueue_cloud)
    pre_emptible: frozenset[str] = frozenset()  # projects a whole-pool project outranks (forge.model.queues)


def cloud_objects(cloud: CloudQueues, settings: KueueSettings) -> list[dict[str, Any]]:
    """The manager's AdmissionCheck, MultiKueue objects, flavors and <project>-cloud queues."""
    queues = [multikueue.as_cloud_queue(cluster_queue(q, cloud.capacity, settings, cloud.preempts[q.project]), cloud)
              for q in cloud.quotas]
    return [*multikueue.manager_objects(cloud), *queues]


def _scheduling_classes(cluster: ClusterModel) -> list[PriorityClassSpec]:
    sched = cluster.component_settings.get(Scheduling.name)
    return list(sched.priority_classes) if sched is not None else []


def topology() -> dict[str, Any]:
    return {"apiVersion": API, "kind": "Topology", "metadata": {"name": TOPOLOGY},
            "spec": {"levels": [{"nodeLabel": RACK_LABEL}, {"nodeLabel": HOSTNAME_LABEL}]}}


def resource_flavor(cluster: ClusterModel, cap: Capacity, flavor: str, settings: KueueSettings) -> dict[str, Any]:
    pool = cap.pool(flavor)
    assert pool is not None
    spec: dict[str, Any] = {"nodeLabels": dict(pool.node_labels)}
    tolerations = cluster.tolerations_for(pool.nodes)
    if tolerations:  # added to every pod admitted on this flavor: the pool's taints
        spec["tolerations"] = tolerations
    if kueue_cloud.uses_topology(pool, settings):  # never on a pool Karpenter makes (forge.components.kueue_cloud)
        spec["topologyName"] = TOPOLOGY
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": flavor}, "spec": spec}


def cluster_queue(q: ProjectQuotas, cap: Capacity, settings: KueueSettings, preempts: bool,
                  stop: dict[str, str] | None = None, pre_emptible: bool = False) -> dict[str, Any]:
    """`stop`: maintenance mode's stopPolicy (driver_upgrades.queue_stop_policy), or none.
    `pre_emptible`: a project a whole-pool project outranks (forge.model.queues): fair-sharing weight 0,
    so it borrows only what no other queue wants and is the first any of them takes back from
    (Kueue gives a borrowing queue of weight 0 an infinite share: with weight 1 a 16-node
    pre-train, borrowing more than the batch work, could never pre-empt it under fair sharing)."""
    stop = {**(stop or {}), **({"fairSharing": {"weight": "0"}} if pre_emptible else {})}
    flavors = []
    for pool in cap.pools:
        resources = []
        for resource in cap.resources:
            quota = q.flavors[pool.flavor].get(resource)
            nominal, borrowing, lending = (quota.nominal, quota.borrowing, quota.lending) if quota else (0, 0, 0)
            resources.append({"name": resource, "nominalQuota": quantity(resource, nominal),
                              "borrowingLimit": quantity(resource, borrowing), "lendingLimit": quantity(resource, lending)})
        flavors.append({"name": pool.flavor, "resources": resources})
    # Classes with preemption Never (batch preprocessing) wait their turn in Kueue too.
    preemption = ({"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"} if preempts
                  else {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"})
    return {
        "apiVersion": API,
        "kind": "ClusterQueue",
        "metadata": {"name": q.project},
        "spec": {
            "cohortName": settings.cohort,
            "namespaceSelector": {"matchLabels": {FLYTE_PROJECT_LABEL: q.project}},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": preemption,
            # One group: a pod's CPU, memory, GPUs and RDMA all come from the same pool.
            "resourceGroups": [{"coveredResources": list(cap.resources), "flavors": flavors}],
            **stop,
        },
    }


def workload_priority_class(spec: PriorityClassSpec) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": spec.name},
            "value": spec.value, "description": spec.description}

