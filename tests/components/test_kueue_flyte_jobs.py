"""A PyTorchJob built the way Flyte's PyTorch plugin builds it lands in its namespace's LocalQueue
and is managed by Kueue's PyTorchJob integration."""
from __future__ import annotations

import copy

import pytest
import yaml
from tests.helpers import CLUSTERS, generated, needs_upstream, rendered, upstream_data

from forge.model.queues import FLYTE_PROJECT_LABEL
from forge.validate.crd import CrdSchemas

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def flyte_pytorch_job(cluster: str, namespace: str, task_labels: dict | None = None) -> dict:
    """What propeller's PyTorch plugin submits for a 2-node task of 8 GPUs per node.

    Labels: the k8s plugin's `default-labels`, then the task execution's own labels, which win
    (flyteplugins: UnionMaps(cfg.DefaultLabels, objectMeta.Labels, taskExecutionMetadata labels)),
    on the job and on each replica's pod template. Pod spec: the namespace's default PodTemplate
    (`default-pod-template-name`) with the task container merged in, plus `default-tolerations`.
    """
    k8s = generated(f"overlays/{cluster}/flyte/values.yaml")["configuration"]["inline"]["plugins"]["k8s"]
    template = next(o for o in rendered(cluster, "flyte") if o["kind"] == "PodTemplate"
                    and o["metadata"]["name"] == k8s["default-pod-template-name"] and o["metadata"].get("namespace") == namespace)
    labels = {**k8s.get("default-labels", {}), **(task_labels or {})}
    spec = copy.deepcopy(template["template"]["spec"])
    spec["containers"] = [{"name": "pytorch", "image": "ghcr.io/exa-labs/train:1.0.0", "args": ["python", "train.py"],
                           "resources": {"requests": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi"},
                                         "limits": {"nvidia.com/gpu": "8", "memory": "512Gi"}}}]
    spec["tolerations"] = k8s["default-tolerations"]
    replica = {"replicas": 1, "restartPolicy": "Never", "template": {"metadata": {"labels": dict(labels)}, "spec": spec}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "f6a3b2c1d0-n0-0", "namespace": namespace, "labels": labels},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"},
                     "pytorchReplicaSpecs": {"Master": copy.deepcopy(replica), "Worker": copy.deepcopy(replica)}}}


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_flyte_pytorchjob_carries_the_queue_label_and_kueue_manages_it(cluster):
    """Kueue's mutating webhook for kubeflow.org PyTorchJobs (an integration only when the manager
    configuration lists kubeflow.org/pytorchjob) sees the queue label and creates the job with
    `spec.runPolicy.suspend: true`: the training-operator makes no pod of a suspended job. Kueue
    then makes a Workload of all its replicas and unsuspends the job only when the LocalQueue's
    ClusterQueue can hold every pod at once (injecting the flavor's node labels and tolerations),
    so a multi-node job starts whole or not at all, and pre-emption suspends it whole again."""
    namespace = "training-production"
    job = flyte_pytorch_job(cluster, namespace)
    assert job["metadata"]["labels"][QUEUE_LABEL] == "default"
    assert all(r["template"]["metadata"]["labels"][QUEUE_LABEL] == "default" for r in job["spec"]["pytorchReplicaSpecs"].values())
    # a task that names another queue wins over the default
    assert flyte_pytorch_job(cluster, namespace, {QUEUE_LABEL: "urgent"})["metadata"]["labels"][QUEUE_LABEL] == "urgent"

    config = yaml.safe_load(generated(f"overlays/{cluster}/kueue/values.yaml")["managerConfig"]["controllerManagerConfigYaml"])
    assert "kubeflow.org/pytorchjob" in config["integrations"]["frameworks"]
    flyte = rendered(cluster, "flyte")
    ns = next(o for o in flyte if o["kind"] == "Namespace" and o["metadata"]["name"] == namespace)
    selector = config["managedJobsNamespaceSelector"]["matchExpressions"][0]
    assert (selector["key"], selector["operator"]) == (FLYTE_PROJECT_LABEL, "Exists") and selector["key"] in ns["metadata"]["labels"]
    queue = next(o for o in flyte if o["kind"] == "LocalQueue" and o["metadata"]["namespace"] == namespace
                 and o["metadata"]["name"] == job["metadata"]["labels"][QUEUE_LABEL])
    cq = next(o for o in rendered(cluster, "kueue") if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == queue["spec"]["clusterQueue"])
    assert cq["spec"]["namespaceSelector"]["matchLabels"].items() <= ns["metadata"]["labels"].items()
    # Admissible: the 16 GPUs of both replicas fit in one flavor's quota plus what it may borrow.
    group = cq["spec"]["resourceGroups"][0]
    assert "nvidia.com/gpu" in group["coveredResources"]
    reach = max(int(r["nominalQuota"]) + int(r["borrowingLimit"]) for f in group["flavors"] for r in f["resources"] if r["name"] == "nvidia.com/gpu")
    assert reach >= 16
    # Its pods keep the project's PriorityClass, which Kueue also reads as the workload's priority.
    assert job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["priorityClassName"] == "default-training"


@needs_upstream
def test_flyte_pytorchjob_as_kueue_holds_it_is_a_valid_pytorchjob():
    crds = CrdSchemas()
    crds.add_dir(upstream_data("training-operator-v1.9.4") / "crds")
    job = flyte_pytorch_job("h200", "finetune-production")
    assert crds.validate(job) == []
    job["spec"]["runPolicy"]["suspend"] = True  # what Kueue's webhook sets on creation
    assert crds.validate(job) == []
