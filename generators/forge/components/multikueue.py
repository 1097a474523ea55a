"""MultiKueue (Kueue 0.19.2, beta, on by default): a project's job reaches the burst cluster by
naming LocalQueue `cloud` instead of `default`; same code, same project, same namespace.

On the manager, an on-premises cluster whose components.kueue.burst names a cloud cluster of the
fleet (forge.fleet.links), next to its own queues (a manager runs local queues too):
- AdmissionCheck <burst> (controllerName kueue.x-k8s.io/multikueue) with MultiKueueConfig <burst>
  as its parameters, listing MultiKueueCluster <burst>, whose kubeconfig is Secret
  multikueue-<burst> in kueue-system (key `kubeconfig`, as Kueue reads it), made by an
  ExternalSecret from the secret store (remote role `multikueue`, forge/<cluster>/multikueue), never
  from git;
- a ResourceFlavor <burst>-<flavor> per flavor of the burst cluster, with no node labels and no
  topology: the manager only counts quota (its own nodes never run these jobs), the worker places;
- a ClusterQueue <project>-cloud per Flyte project, in cohort <burst>, carrying the admission
  check: exactly the burst cluster's own queue of that project (nominal, borrowing and lending per
  flavor and resource from its pools at their max_count, and its pre-emption), so what the manager
  admits is what the worker has room for, per project, and `forge queues` shows it;
- (forge.components.flyte) LocalQueue `cloud` in every project-domain namespace, feeding
  <project>-cloud.
On every cloud cluster (a worker), LocalQueue `cloud` in each project-domain namespace feeds the
project's own ClusterQueue: MultiKueue creates the job there under the queue name it had on the
manager. Kueue defaults `spec.managedBy` (batch Job) and `spec.runPolicy.managedBy` (Kubeflow jobs:
the training-operator v1.9 honours it) to kueue.x-k8s.io/multikueue on the manager, so no pod
starts there; the status comes back from the worker.

Per project, not one shared cloud queue: a shared one would let one project's backlog hold the
whole burst pool in the manager's books while the worker's per-project queues refuse it, so jobs
would sit admitted on the manager and pending on the worker.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from forge.model.capacity import Capacity
from forge.model.queues import API, CLOUD_QUEUE, ProjectQuotas
from forge.model.secrets import SecretUse

CONTROLLER = "kueue.x-k8s.io/multikueue"
ROLE = "multikueue"  # the remote role of the worker's kubeconfig (forge/<cluster>/multikueue)
KUBECONFIG_KEY = "kubeconfig"  # the Secret key Kueue reads (MultiKueueCluster, locationType Secret)
# The controller manager's multiKueue section: Kueue's defaults, written out (docs/burst.md).
MANAGER_CONFIG = {
    "gcInterval": "1m",  # remote objects whose manager copy is gone are deleted this often
    "origin": "multikueue",  # the label value that marks the worker objects this manager made
    "workerLostTimeout": "15m",  # a worker unreachable this long: its jobs are requeued on the manager
    "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
}


@dataclass(frozen=True)
class CloudQueues:
    """The manager's side of a burst link: the burst cluster's capacity and its projects' quotas."""

    burst: str  # the burst cluster (its AdmissionCheck, MultiKueueConfig and MultiKueueCluster)
    capacity: Capacity  # the burst cluster's, its pools at their max_count, flavors named <burst>-<flavor>
    quotas: tuple[ProjectQuotas, ...]  # the burst cluster's queue of each of this cluster's projects (same names)
    preempts: dict[str, bool]  # as on the burst cluster

    @property
    def secret(self) -> str:
        return f"multikueue-{self.burst}"



def queue_name(project: str) -> str:
    return f"{project}-{CLOUD_QUEUE}"


def cloud_queues(burst, projects: list[str]) -> CloudQueues:
    """From the burst cluster's model (`ClusterModel.linked`): its Kueue facts for this cluster's
    projects, its flavors under the manager's names (<burst>-<flavor>)."""
    facts = burst.component_facts["kueue"]
    name = lambda flavor: f"{burst.name}-{flavor}"  # noqa: E731
    cap = Capacity(tuple(dataclasses.replace(p, flavor=name(p.flavor)) for p in facts.capacity.pools))
    quotas = tuple(dataclasses.replace(q, flavors={name(f): r for f, r in q.flavors.items()})
                   for q in facts.quotas if q.project in projects)
    return CloudQueues(burst.name, cap, quotas, {p: facts.preempts[p] for p in projects if p in facts.preempts})


def secret_use(cloud: CloudQueues, namespace: str) -> SecretUse:
    return SecretUse("kubeconfig", cloud.secret, (namespace,), role=ROLE)


# Integrations a manager leaves out: MultiKueue watches every integrated kind on each worker and
# keeps a worker inactive while one is missing there (Kueue 0.19.2: `ClientConnectionFailed: no
# matches for kind "LeaderWorkerSet"`, seen in the fleet in a box), and no forge cluster serves
# these: JobSet, AppWrapper, Trainer v2's TrainJob, LeaderWorkerSet, and MPIJob v2beta1 (the
# mpi-operator's; the training-operator's MPIJob is kubeflow.org/v1).
UNSERVED_FRAMEWORKS = ("jobset.x-k8s.io/jobset", "workload.codeflare.dev/appwrapper", "trainer.kubeflow.org/trainjob",
                       "leaderworkerset.x-k8s.io/leaderworkerset", "kubeflow.org/mpijob")

# What the manager does in a worker (Kueue's create-multikueue-kubeconfig.sh): every kind the
# manager integrates (kueue.frameworks less UNSERVED_FRAMEWORKS), which MultiKueue watches on the
# worker whether or not a job of it is ever sent (a kind it may not watch keeps the worker
# inactive: `rayservices.ray.io is forbidden`, seen in the fleet in a box), and the Workloads.
WORKER_SA = "multikueue"
WORKER_KINDS = (("batch", "jobs"), ("", "pods"), ("kubeflow.org", "pytorchjobs"), ("kubeflow.org", "mpijobs"),
                ("ray.io", "rayjobs"), ("ray.io", "rayclusters"), ("ray.io", "rayservices"),
                ("apps", "deployments"), ("apps", "statefulsets"), ("kueue.x-k8s.io", "workloads"))

# Beyond create/delete/read, as Kueue 0.19.2's site/static/examples/multikueue/create-multikueue-kubeconfig.sh
# grants: the manager updates and patches the worker's Workloads (it removes their resource-in-use
# finalizer, pushes a priority change, scales an elastic workload down) and RayClusters (elastic
# worker groups); without them each call is Forbidden and retried for ever. It also reads the queues.
WORKER_WRITES = {"workloads": ("update", "patch"), "rayclusters": ("update", "patch")}


def worker_objects(namespace: str) -> list[dict[str, Any]]:
    """On a cloud cluster: the ServiceAccount a manager's kubeconfig logs in as, what it may do
    (create, watch and delete the jobs and Workloads it dispatches; read their status; update and
    patch the Workloads, their status and RayClusters; read the ClusterQueues and LocalQueues), and its long-lived token Secret, which the API server
    fills (the kubeconfig in the manager's secret store is made from it: docs/burst.md). The
    Secret as written has no data, so Argo CD's diff never sees the token the server adds."""
    rbac = "rbac.authorization.k8s.io"
    name = f"{WORKER_SA}-worker"
    rules = [{"apiGroups": [g], "resources": [r], "verbs": ["create", "delete", "get", "list", "watch", *WORKER_WRITES.get(r, ())]}
             for g, r in WORKER_KINDS]
    rules += [{"apiGroups": [g], "resources": [f"{r}/status"], "verbs": ["get", "patch", "update"] if r == "workloads" else ["get"]}
              for g, r in WORKER_KINDS]
    rules.append({"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]})
    subject = {"kind": "ServiceAccount", "name": WORKER_SA, "namespace": namespace}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": WORKER_SA, "namespace": namespace}},
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
         "metadata": {"name": WORKER_SA, "namespace": namespace, "annotations": {"kubernetes.io/service-account.name": WORKER_SA}}},
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules},
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": name}, "subjects": [subject]},
    ]


def manager_objects(cloud: CloudQueues) -> list[dict[str, Any]]:
    """AdmissionCheck, MultiKueueConfig, MultiKueueCluster and the flavors (cluster-scoped)."""
    meta = {"name": cloud.burst}
    return [
        {"apiVersion": API, "kind": "AdmissionCheck", "metadata": dict(meta),
         "spec": {"controllerName": CONTROLLER,
                  "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": cloud.burst}}},
        {"apiVersion": API, "kind": "MultiKueueConfig", "metadata": dict(meta), "spec": {"clusters": [cloud.burst]}},
        {"apiVersion": API, "kind": "MultiKueueCluster", "metadata": dict(meta),
         "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": cloud.secret}}}},
        *({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": p.flavor}, "spec": {}}
          for p in cloud.capacity.pools),
    ]


def as_cloud_queue(queue: dict[str, Any], cloud: CloudQueues) -> dict[str, Any]:
    """The burst cluster's ClusterQueue of a project (forge.components.kueue.cluster_queue over
    the cloud capacity and quotas) as the manager's <project>-cloud: its own cohort, the
    MultiKueue admission check."""
    project = queue["metadata"]["name"]
    spec = {**queue["spec"], "cohortName": cloud.burst,
            "admissionChecksStrategy": {"admissionChecks": [{"name": cloud.burst}]}}
    return {**queue, "metadata": {"name": queue_name(project)}, "spec": spec}
