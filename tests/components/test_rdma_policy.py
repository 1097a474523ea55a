"""Issue 21 item 12: what tasks may request beyond the queues (Kueue leaves node-local resources
out of its accounting), and multi-node PyTorch jobs without the compute fabric refused on fabric
clusters (forge.components.flyte.rdma_policy)."""
from __future__ import annotations

import pytest
import yaml

from forge.components.flyte import rdma_policy
from tests.helpers import CLUSTERS, REPO, generated


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_kueue_leaves_ephemeral_storage_and_huge_pages_out_of_its_accounting(cluster):
    config = yaml.safe_load(generated(f"overlays/{cluster}/kueue/values.yaml")["managerConfig"]["controllerManagerConfigYaml"])
    assert config["resources"] == {"excludeResourcePrefixes": ["ephemeral-storage", "hugepages-"]}


def test_fabric_clusters_refuse_multi_node_pytorch_without_the_rdma_template():
    folder = REPO / "overlays/h200/flyte"
    policy = generated(f"overlays/h200/flyte/validatingadmissionpolicy-{rdma_policy.POLICY}.yaml")
    binding = generated(f"overlays/h200/flyte/validatingadmissionpolicybinding-{rdma_policy.POLICY}.yaml")
    assert (folder / f"validatingadmissionpolicy-{rdma_policy.POLICY}.yaml").name in (folder / "kustomization.yaml").read_text()
    assert policy["spec"]["matchConstraints"]["resourceRules"][0]["resources"] == ["pytorchjobs"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    check, cloud = policy["spec"]["validations"]  # on premises; on the cloud queue (tests/cloud/test_burst_works.py)
    assert 'pod_template_name="forge-efa"' in cloud["message"]
    assert 'pod_template_name=\\"forge-rdma\\"' in yaml.safe_dump(check) or 'pod_template_name="forge-rdma"' in check["message"]
    fabric = next(v["expression"] for v in policy["spec"]["variables"] if v["name"] == "fabric")
    assert "'rdma/rdma_network'" in fabric  # the resource the forge-rdma template requests
    # no fabric, no policy
    assert not list((REPO / "overlays/a100/flyte").glob(f"validatingadmissionpolicy-{rdma_policy.POLICY}.yaml"))
