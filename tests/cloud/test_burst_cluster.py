"""The shipped cloud burst cluster (h200-burst): what its node pools generate (Karpenter NodePools
and EC2NodeClasses, the EFA device plugin, the GPU Operator on the EKS GPU image, Kueue quotas at
the pools' maximum), and the catalogue's instance types."""
from __future__ import annotations


import pytest

from forge.files.datafile import DataFileError
from forge.facts.hardware import INSTANCE_TYPES, load_catalogue
from tests.helpers import generated, generated_dir, inventory_text, model

CLUSTER = "h200-burst"


def test_instance_types_are_catalogue_data_with_sources():
    p5e = INSTANCE_TYPES["p5e.48xlarge"]
    assert (p5e.gpu_model, p5e.gpu_count, p5e.efa_interfaces, p5e.cpu_threads, p5e.memory_gib) == ("H200-141GB", 8, 32, 192, 2048)
    assert INSTANCE_TYPES["p5en.48xlarge"].efa_interfaces == 16
    assert all(t.source for t in INSTANCE_TYPES.values())


def test_a_catalogued_instance_naming_an_unknown_gpu_is_refused_with_its_line(tmp_path):
    from forge.facts.hardware import CATALOGUE_FILE
    text = CATALOGUE_FILE.read_text().replace("    gpu_model: H200-141GB\n", "    gpu_model: H300\n", 1)
    path = tmp_path / "hardware.yaml"
    path.write_text(text)
    with pytest.raises(DataFileError) as caught:
        load_catalogue(path, "hardware.yaml")
    (problem,) = [str(p) for p in caught.value.problems]
    line = next(i + 1 for i, l in enumerate(text.splitlines()) if l == "    gpu_model: H300")
    assert problem.startswith(f"hardware.yaml:{line}: instances.p5e.48xlarge.gpu_model: unknown GPU model 'H300'")


def test_the_burst_pool_stands_for_its_maximum_in_every_fact():
    cluster = model(CLUSTER)
    burst = [n for n in cluster.nodes if n.pool and n.pool.name == "h200-reserved"]
    spot = [n for n in cluster.nodes if n.pool and n.pool.name == "h200-spot"]
    assert len(burst) == 100 and len(spot) == 16 and cluster.gpu_count == 928  # the reservation and its spot fallback
    assert {n.pool.capacity_type for n in burst} == {"reserved"} and burst[0].pool.efa_interfaces == 32
    # Controllers go to the system pool (no control plane in EKS); it runs no workloads.
    assert cluster.system_node_selector == {"forge.exa.ai/role.system": "true"}
    assert not [n for n in cluster.workload_nodes if "system" in n.roles]


def test_karpenter_node_pools_follow_the_inventory():
    objs = {(o["kind"], o["metadata"]["name"]): o for o in generated_dir(f"overlays/{CLUSTER}/karpenter")}
    assert ("NodePool", "system") not in objs  # the managed node group: not Karpenter's
    pool = objs[("NodePool", "h200-reserved")]["spec"]
    assert pool["limits"] == {"nodes": "100", "cpu": "19200", "nvidia.com/gpu": "800"}
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]} in pool["template"]["spec"]["requirements"]
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5e.48xlarge"]} in pool["template"]["spec"]["requirements"]
    assert pool["template"]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert pool["template"]["metadata"]["labels"]["exa.ai/pool"] == "burst"
    assert pool["disruption"]["consolidationPolicy"] == "WhenEmpty"
    node_class = objs[("EC2NodeClass", "h200-reserved")]["spec"]
    assert node_class["role"] == "KarpenterNodeRole-h200-burst"
    assert node_class["amiSelectorTerms"][0]["alias"].startswith("al2023@v")
    values = generated(f"overlays/{CLUSTER}/karpenter/values.yaml")
    assert values["settings"]["clusterName"] == CLUSTER
    assert values["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"] == "arn:aws:iam::111122223333:role/KarpenterController-h200-burst"


def test_a_larger_max_count_raises_the_node_pool_limit_and_the_quotas():
    text = inventory_text(CLUSTER).replace("    max_count: 100\n", "    max_count: 120\n")
    cluster = model(CLUSTER, text)
    first = next(n for n in cluster.nodes if n.pool and n.pool.name == "h200-reserved")
    from forge.components.karpenter import node_pool
    assert node_pool(first.pool, first)["spec"]["limits"]["nodes"] == "120"
    assert cluster.gpu_count == 960 + 128  # and the 16 spot nodes


def test_efa_device_plugin_replaces_the_network_operator():
    folders = {p for p in __import__("os").listdir(f"overlays/{CLUSTER}")}
    assert "efa-device-plugin" in folders and "network-operator" not in folders and "alluxio" not in folders
    values = generated(f"overlays/{CLUSTER}/efa-device-plugin/values.yaml")
    assert values["supportedInstanceLabels"]["values"] == ["p5e.48xlarge"]
    assert values["image"]["repository"] == "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["tolerations"]


def test_gpu_operator_leaves_driver_and_toolkit_to_the_cloud_image():
    values = generated(f"overlays/{CLUSTER}/gpu-operator/values.yaml")
    assert values["driver"] == {"enabled": False} and values["toolkit"] == {"enabled": False}
    assert values["dcgmExporter"]["serviceMonitor"]["enabled"] is True
    onprem = generated("overlays/h200/gpu-operator/values.yaml")
    assert onprem["driver"]["version"] and "toolkit" not in onprem


def test_flyte_reads_s3_directly_without_alluxio():
    values = generated(f"overlays/{CLUSTER}/flyte/values.yaml")
    assert values["configuration"]["storage"]["providerConfig"]["s3"]["endpoint"] == "https://s3.us-west-2.amazonaws.com"


def test_no_node_feature_rule_for_nodes_karpenter_has_not_made():
    rules = generated_dir(f"overlays/{CLUSTER}/node-feature-discovery", "nodefeaturerule")
    assert rules == []


def test_efa_interfaces_are_capacity_kueue_and_the_box_count():
    from forge.model.capacity import capacity
    cluster = model(CLUSTER)
    pool = capacity(cluster).pool("h200-141gb")
    assert pool.resources["vpc.amazonaws.com/efa"] == 116 * 32 and pool.unit("vpc.amazonaws.com/efa") == "EFA interface"


def test_the_box_makes_the_system_pools_nodes_as_the_managed_node_group_labels_them():
    from forge.twin.nodes import node_objects
    nodes, findings = node_objects(model(CLUSTER), [], "v1.34.4", ())
    assert len(nodes) == 3 and findings == []  # the Karpenter pools' nodes are Karpenter's (forge.twin.karpenter)
    labels = nodes[0]["metadata"]["labels"]
    assert labels["forge.exa.ai/role.system"] == "true" and "karpenter.sh/nodepool" not in labels
    assert labels["node.kubernetes.io/instance-type"] == "m7i.4xlarge"


# Stand-ins for what the real charts render from our values (recorded from `forge hydrate` with a
# mirror of the pinned charts, docs/charts.md): each expectation failed on them before it named
# what the chart itself adds.
def test_the_efa_expectation_holds_for_the_charts_daemonset_with_its_own_toleration():
    from forge.components.efa_device_plugin import EfaDevicePlugin
    from forge.upstream.check import check_expected
    values = generated(f"overlays/{CLUSTER}/efa-device-plugin/values.yaml")
    # aws-efa-k8s-device-plugin v0.5.30 templates/daemonset.yaml: CriticalAddonsOnly, then .Values.tolerations
    daemonset = {"kind": "DaemonSet", "metadata": {"name": "aws-efa-k8s-device-plugin"}, "spec": {"template": {"spec": {
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, *values["tolerations"]]}}}}
    [expected] = EfaDevicePlugin().expected_in_hydrated(model(CLUSTER))
    assert check_expected([daemonset], expected) == []
    dropped = {"kind": "DaemonSet", "metadata": {"name": "aws-efa-k8s-device-plugin"}, "spec": {"template": {"spec": {
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}]}}}}
    assert check_expected([dropped], expected) != []


def test_the_karpenter_expectation_holds_for_the_node_selector_helm_merges_into_the_charts():
    from forge.components.karpenter import Karpenter
    from forge.upstream.check import check_expected
    values = generated(f"overlays/{CLUSTER}/karpenter/values.yaml")
    # karpenter 1.14.1 values.yaml: nodeSelector {kubernetes.io/os: linux}; helm merges ours into it
    deployment = {"kind": "Deployment", "metadata": {"name": "karpenter"}, "spec": {"template": {"spec": {
        "nodeSelector": {"kubernetes.io/os": "linux", **values["nodeSelector"]},
        "containers": [{"name": "controller", "image": f"{values['controller']['image']['repository']}:{values['controller']['image']['tag']}"}]}}}}
    expected = Karpenter().expected_in_hydrated(model(CLUSTER))
    assert [p for e in expected for p in check_expected([deployment], e)] == []
