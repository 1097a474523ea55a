"""Issue 21 items 2, 10 and 12 on a real kube-apiserver 1.34: forge's admission policies are
accepted (their CEL compiles), and they admit and refuse what they should. The box runs the
Priority admission plugin and MutatingAdmissionPolicy (feature gate on)."""
from __future__ import annotations

import copy

import pytest

from forge.twin.kube import ApiError
from tests.twin.conftest import say  # noqa: F401  (the boxes fixture comes from conftest)

NS = "training-production"  # a project namespace of h200, the fabric cluster


def pod(name: str, namespace: str = NS, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", **spec.pop("container", {})}], **spec}}


def test_a_project_namespace_admits_ipc_lock_and_refuses_root_on_the_node(boxes):
    _, kube, _, _ = boxes.get("h200")
    ok = pod("fence-ipc-lock", container={"securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}})
    kube.create(ok)
    kube.delete("v1", "Pod", "fence-ipc-lock", NS)
    for name, bad, said in [
        ("fence-hostpath", pod("fence-hostpath", volumes=[{"name": "root", "hostPath": {"path": "/"}}]), "hostPath volumes"),
        ("fence-privileged", pod("fence-privileged", container={"securityContext": {"privileged": True}}), "privileged containers"),
        ("fence-sys-admin", pod("fence-sys-admin", container={"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}),
         "capabilities beyond baseline"),
        ("fence-host-network", pod("fence-host-network", hostNetwork=True), "host namespaces"),
    ]:
        with pytest.raises(ApiError) as refused:
            kube.create(bad)
        assert "forge-baseline-ipc-lock" in refused.value.message and said in refused.value.message, refused.value.message


def test_a_classless_infrastructure_pod_gets_a_system_priority(boxes):
    _, kube, _, _ = boxes.get("h200")
    made = kube.create(pod("infra-priority", namespace="alluxio"))
    try:
        assert made["spec"]["priorityClassName"] == "system-cluster-critical"
        assert made["spec"]["priority"] == 2_000_000_000
    finally:
        kube.delete("v1", "Pod", "infra-priority", "alluxio")


def pytorch_job(name: str, template_extra: dict | None = None) -> dict:
    container = {"name": "pytorch", "image": "registry.k8s.io/pause:3.10", **(template_extra or {})}
    spec = {"replicas": 1, "template": {"spec": {"containers": [container]}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name, "namespace": NS},
            "spec": {"pytorchReplicaSpecs": {"Master": copy.deepcopy(spec), "Worker": {**copy.deepcopy(spec), "replicas": 3}}}}


def test_a_multi_node_pytorch_job_without_the_fabric_is_refused(boxes):
    _, kube, _, _ = boxes.get("h200")
    with pytest.raises(ApiError) as refused:
        kube.create(pytorch_job("no-fabric"))
    assert 'pod_template_name="forge-rdma"' in refused.value.message, refused.value.message
    rdma = {"resources": {"limits": {"rdma/rdma_network": 1}, "requests": {"rdma/rdma_network": 1}}}
    kube.create(pytorch_job("with-fabric", rdma))
    kube.delete("kubeflow.org/v1", "PyTorchJob", "with-fabric", NS)


def test_a_multi_node_pytorch_job_on_the_cloud_queue_must_request_efa(boxes):
    # Issue 32: a job h200 sends to h200-burst runs NCCL over EFA only when its pods request it.
    _, kube, _, _ = boxes.get("h200")
    cloud = pytorch_job("cloud-no-efa")
    cloud["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "cloud"}
    with pytest.raises(ApiError) as refused:
        kube.create(cloud)
    assert 'pod_template_name="forge-efa"' in refused.value.message, refused.value.message
    efa = {"resources": {"limits": {"vpc.amazonaws.com/efa": 32}, "requests": {"vpc.amazonaws.com/efa": 32}}}
    ok = pytorch_job("cloud-efa", efa)
    ok["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "cloud"}
    kube.create(ok)
    kube.delete("kubeflow.org/v1", "PyTorchJob", "cloud-efa", NS)


def test_an_alluxio_master_pod_gets_the_one_per_node_anti_affinity(boxes):
    _, kube, _, _ = boxes.get("h200")
    master = pod("spread-check", namespace="alluxio")
    master["metadata"]["labels"] = {"app": "alluxio", "release": "alluxio", "role": "alluxio-master"}
    made = kube.create(master)
    try:
        [term] = made["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term == {"labelSelector": {"matchLabels": {"app": "alluxio", "release": "alluxio", "role": "alluxio-master"}},
                        "topologyKey": "kubernetes.io/hostname"}
        assert made["spec"]["priorityClassName"] == "system-cluster-critical"  # and the infrastructure priority
    finally:
        kube.delete("v1", "Pod", "spread-check", "alluxio")


def test_a_pod_started_outside_flyte_gets_the_upgrade_wait_label(boxes):
    # Issue 22 item 3: the label driver upgrades wait for (forge.components.flyte.workload_label).
    _, kube, _, report = boxes.get("h200")
    assert [str(r) for r in report.refused if "forge-workload-label" in str(r)] == []  # the API server took the policy
    flytes = pod("workload-flyte")
    flytes["metadata"]["labels"] = {"forge.exa.ai/workload": "flyte", "app": "x"}
    made = {name: kube.create(p) for name, p in (("workload-kubectl", pod("workload-kubectl")), ("workload-flyte", flytes))}
    other = kube.create(pod("workload-elsewhere", namespace="alluxio"))
    try:
        # (Kueue's pod webhook adds its own queue labels beside it.)
        assert made["workload-kubectl"]["metadata"]["labels"]["forge.exa.ai/workload"] == "external"
        assert made["workload-flyte"]["metadata"]["labels"]["forge.exa.ai/workload"] == "flyte"  # kept
        assert made["workload-flyte"]["metadata"]["labels"]["app"] == "x"
        assert "forge.exa.ai/workload" not in (other["metadata"].get("labels") or {})  # project namespaces only
    finally:
        for name in made:
            kube.delete("v1", "Pod", name, NS)
        kube.delete("v1", "Pod", "workload-elsewhere", "alluxio")


def test_an_alluxio_worker_pod_checks_its_tier_mounts_before_anything_else(boxes):
    # Issue 22 item 9 (forge.components.alluxio.tier_check): the init check goes in first.
    _, kube, _, report = boxes.get("h200")
    assert [str(r) for r in report.refused if "worker-mounts" in str(r)] == []  # the API server took the policy
    worker = pod("tier-check", namespace="alluxio",
                 initContainers=[{"name": "chart-init", "image": "registry.k8s.io/pause:3.10"}],
                 volumes=[{"name": "ssd-0", "hostPath": {"path": "/mnt/nvme0", "type": "DirectoryOrCreate"}}])
    worker["metadata"]["labels"] = {"app": "alluxio", "release": "alluxio", "role": "alluxio-worker"}
    made = kube.create(worker)
    try:
        assert len(made["spec"]["initContainers"]) == 2, made["spec"]
        first, second = made["spec"]["initContainers"]
        assert (first["name"], second["name"]) == ("forge-tier-mounts", "chart-init")
        assert "mountpoint -q" in first["command"][2] and "/host/mnt/nvme0" in first["command"][2]
        assert first["volumeMounts"][0]["mountPath"] == "/host/mnt"
        assert {"name": "forge-tier-parent-0", "hostPath": {"path": "/mnt", "type": "Directory"}} in made["spec"]["volumes"]
    finally:
        kube.delete("v1", "Pod", "tier-check", "alluxio")
