"""Issue 32: what kept the cloud burst from working, each fixed and held here. These tests fail on
the main before the fix (each says what main did)."""
from __future__ import annotations

import json

import yaml

from forge.pod_scripts import prereq_check
from tests.argocd.test_bootstrap import _Api, api  # noqa: F401  (the stand-in API server and its fixture)
from tests.helpers import REPO, edit, generated, generated_dir, inventory_text, line_of, problems

BURST = "clusters/h200-burst/inventory.yaml"
BURST_TEXT = inventory_text("h200-burst")


def kueue_config(cluster: str) -> dict:
    return yaml.safe_load(generated(f"overlays/{cluster}/kueue/values.yaml")["managerConfig"]["controllerManagerConfigYaml"])


# ---- the TAS deadlock ----------------------------------------------------------------------------

def test_no_flavor_of_a_karpenter_pool_is_topology_aware():
    # main: both h200-burst flavors set topologyName racks, so Kueue admitted nothing until nodes
    # existed, and Karpenter made none until something was admitted.
    objs = generated_dir("overlays/h200-burst/kueue")
    flavors = [o for o in objs if o["kind"] == "ResourceFlavor"]
    assert {f["metadata"]["name"] for f in flavors} == {"h200-141gb", "cpu-m7i.8xlarge"}
    assert [f["metadata"]["name"] for f in flavors if "topologyName" in f["spec"]] == []
    assert [o for o in objs if o["kind"] == "Topology"] == []  # nothing places by racks there
    # on premises the nodes exist: topology-aware as before
    onprem = [o for o in generated_dir("overlays/h200/kueue") if o["kind"] == "ResourceFlavor" and o["spec"].get("nodeLabels")]
    assert onprem and all(f["spec"]["topologyName"] == "racks" for f in onprem)


def test_a_topology_on_an_autoscaled_pools_flavor_is_refused_at_its_line():
    text = edit(BURST_TEXT, "  kueue: {}\n", "  kueue:\n    flavors:\n      h200-141gb: {topology: true}\n")
    found = problems(text, BURST)
    path = "components.kueue.flavors.h200-141gb.topology"
    mine = [p for p in found if f": {path}: " in p]
    assert mine and mine[0].startswith(f"{BURST}:{line_of(text, 'h200-141gb: {topology')}: {path}: "), found
    assert "Karpenter makes" in mine[0] and "Ready" in mine[0], mine[0]


def test_a_flavor_setting_for_no_flavor_is_refused():
    text = edit(BURST_TEXT, "  kueue: {}\n", "  kueue:\n    flavors:\n      h100-80gb: {topology: false}\n")
    [mine] = [p for p in problems(text, BURST) if ": components.kueue.flavors.h100-80gb: " in p]
    assert "h200-141gb" in mine and "cpu-m7i.8xlarge" in mine, mine


# ---- waitForPodsReady per cluster ------------------------------------------------------------------

def test_the_cloud_cluster_waits_longer_for_its_pods_and_its_manager_at_least_as_long():
    # main: 20m everywhere, shorter than launching 100 p5e and pulling the image; and the manager
    # (h200) evicts a cloud job at its own timeout from the status the worker reports.
    burst = kueue_config("h200-burst")["waitForPodsReady"]["timeout"]
    assert burst == "60m"
    assert kueue_config("h200")["waitForPodsReady"]["timeout"] == burst
    assert kueue_config("a100")["waitForPodsReady"]["timeout"] == "20m"  # on premises, no burst link


# ---- the worker's RBAC, as Kueue documents it ----------------------------------------------------

# What Kueue 0.19.2's site/static/examples/multikueue/create-multikueue-kubeconfig.sh grants beyond
# create/delete/get/list/watch, for the kinds forge's manager integrates (tag v0.19.2).
KUEUE_0_19_2 = {
    ("kueue.x-k8s.io", "workloads"): {"create", "delete", "get", "list", "watch", "update", "patch"},
    ("kueue.x-k8s.io", "workloads/status"): {"get", "patch", "update"},
    ("kueue.x-k8s.io", "clusterqueues"): {"get", "list", "watch"},
    ("kueue.x-k8s.io", "localqueues"): {"get", "list", "watch"},
    ("ray.io", "rayclusters"): {"create", "delete", "get", "list", "watch", "update", "patch"},
}


def test_the_worker_grants_the_manager_what_kueues_own_script_grants():
    # main: no update/patch on workloads (the manager's finalizer removal and priority pushes were
    # Forbidden, retried for ever), no read of the queues, no update/patch on RayClusters.
    role = next(o for o in generated_dir("overlays/h200-burst/kueue") if o["kind"] == "ClusterRole"
                and o["metadata"]["name"] == "multikueue-worker")
    allowed: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                allowed.setdefault((group, resource), set()).update(rule["verbs"])
    for key, verbs in KUEUE_0_19_2.items():
        assert verbs <= allowed.get(key, set()), (key, sorted(verbs - allowed.get(key, set())))


# ---- the EKS VPC CNI in the PreSync check --------------------------------------------------------

def _aws_node(enforcing: bool) -> dict:
    """DaemonSet aws-node as the vpc-cni add-on makes it (aws/amazon-vpc-cni-k8s charts/aws-vpc-cni:
    the network policy agent's container and its --enable-network-policy argument)."""
    agent = {"name": "aws-eks-nodeagent", "args": ["--enable-ipv6=false", f"--enable-network-policy={str(enforcing).lower()}",
                                                    "--enable-cloudwatch-logs=false"]}
    return {"metadata": {"name": "aws-node", "namespace": "kube-system"}, "status": {"numberReady": 3},
            "spec": {"template": {"spec": {"containers": [{"name": "aws-node"}, agent]}}}}


def _without_apis(configmap: str) -> str:
    """The PreSync check's spec without its served-API checks: the stand-in API server serves no discovery."""
    spec = json.loads(generated(configmap)["data"]["prerequisites.json"])
    spec.pop("apis", None)
    return json.dumps(spec)


def test_the_presync_check_knows_the_eks_vpc_cni_and_its_network_policy_agent(api, tmp_path, capsys):
    # main: an EKS cluster's only CNI, aws-node, was no CNI it knew: the PreSync check failed for
    # ever and the cluster never synced.
    spec = tmp_path / "prerequisites.json"
    spec.write_text(_without_apis("clusters/h200-burst/argocd/prerequisites/configmap.yaml"))
    present = {"/apis/storage.k8s.io/v1/storageclasses/gp3": {}, "/apis/networking.k8s.io/v1/ingressclasses/nginx": {},
               "/api/v1/namespaces/external-secrets/secrets/external-secrets-aws":
                   {"data": {"access-key-id": "QQ==", "secret-access-key": "QQ=="}}}
    _Api.objects = {**present, "/apis/apps/v1/daemonsets": {"items": [_aws_node(True)]}}
    assert prereq_check.main([str(spec), "--api", api]) == 0, capsys.readouterr().out
    capsys.readouterr()
    _Api.objects = {**present, "/apis/apps/v1/daemonsets": {"items": [_aws_node(False)]}}
    assert prereq_check.main([str(spec), "--api", api]) == 1
    [line] = capsys.readouterr().out.splitlines()
    assert "aws-eks-nodeagent --enable-network-policy=true" in line and 'enableNetworkPolicy: "true"' in line, line
    # on premises aws-node is no CNI forge knows
    onprem = tmp_path / "onprem.json"
    onprem.write_text(_without_apis("clusters/h200/argocd/prerequisites/configmap.yaml"))
    _Api.objects = {"/apis/apps/v1/daemonsets": {"items": [_aws_node(True)]}}
    prereq_check.main([str(onprem), "--api", api])
    assert any("a CNI that enforces NetworkPolicy" in line for line in capsys.readouterr().out.splitlines())


# ---- EFA for multi-node cloud jobs ---------------------------------------------------------------

def test_the_manager_gives_cloud_jobs_a_template_requesting_every_efa_interface():
    # main: no PodTemplate requested vpc.amazonaws.com/efa and h200's policy let cloud-queue jobs
    # through: Karpenter attached no EFA (it does for a NodeClaim that requests it), NCCL ran over TCP.
    for cluster in ("h200", "h200-burst"):
        template = generated(f"overlays/{cluster}/flyte/podtemplate-training-production-forge-efa.yaml")
        pod = template["template"]
        container = pod["spec"]["containers"][0]
        assert container["resources"]["requests"]["vpc.amazonaws.com/efa"] == 32  # p5e.48xlarge: 32 EFA interfaces
        assert container["resources"]["limits"]["vpc.amazonaws.com/efa"] == 32
        assert pod["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}  # a running gang keeps its nodes
        assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
        assert "IPC_LOCK" not in str(container)  # baseline Pod Security on the cloud cluster
    policy = generated("overlays/h200/flyte/validatingadmissionpolicy-forge-multinode-pytorch-rdma.yaml")
    cloud = policy["spec"]["validations"][1]
    assert 'pod_template_name="forge-efa"' in cloud["message"] and "vpc.amazonaws.com/efa" in cloud["message"]
    # the cloud cluster refuses its own multi-node jobs without EFA
    own = generated("overlays/h200-burst/flyte/validatingadmissionpolicy-forge-multinode-pytorch-rdma.yaml")
    [check] = own["spec"]["validations"]
    assert 'pod_template_name="forge-efa"' in check["message"]
    assert not list((REPO / "overlays/a100/flyte").glob("podtemplate-*-forge-efa.yaml"))  # no cloud: no EFA template


# ---- a pool design a 100-node gang can run on ------------------------------------------------------

def test_the_gang_pool_is_a_capacity_reservation_in_a_placement_group_with_a_spot_fallback():
    # main: one pool, spot only, no weight, no placement group, no reservation; empty nodes gone
    # after 10 minutes, a drifted node replaced under work.
    objs = {(o["kind"], o["metadata"]["name"]): o for o in generated_dir("overlays/h200-burst/karpenter")}
    reserved, spot = objs[("NodePool", "h200-reserved")]["spec"], objs[("NodePool", "h200-spot")]["spec"]
    assert reserved["weight"] == 100 and spot["weight"] == 10  # Karpenter tries the reservation first
    assert objs[("NodePool", "cpu")]["spec"]["weight"] == 50  # on-demand
    for pool, kind in ((reserved, "reserved"), (spot, "spot")):
        assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [kind]} in pool["template"]["spec"]["requirements"]
        assert pool["disruption"]["consolidateAfter"] == "30m"  # a requeued gang finds its nodes
        assert pool["disruption"]["budgets"] == [{"nodes": "10%", "reasons": ["Empty"]}, {"nodes": "0", "reasons": ["Drifted"]}]
    for name in ("h200-reserved", "h200-spot"):  # one spine for the whole gang, even when it spills over
        assert objs[("EC2NodeClass", name)]["spec"]["placementGroupSelector"] == {"name": "h200-burst-p5e"}
    assert objs[("EC2NodeClass", "h200-reserved")]["spec"]["capacityReservationSelectorTerms"] == [
        {"tags": {"karpenter.sh/discovery": "h200-burst", "forge.exa.ai/pool": "h200-reserved"}}]
    assert "capacityReservationSelectorTerms" not in objs[("EC2NodeClass", "h200-spot")]["spec"]
    assert "placementGroupSelector" not in objs[("EC2NodeClass", "cpu")]["spec"]
    # one Kueue flavor over both pools: Kueue admits against both, Karpenter picks the pool by weight
    flavor = next(o for o in generated_dir("overlays/h200-burst/kueue") if o["kind"] == "ResourceFlavor"
                  and o["metadata"]["name"] == "h200-141gb")
    assert flavor["spec"]["nodeLabels"] == {"forge.exa.ai/gpu-model": "H200-141GB", "nvidia.com/mig.config": "all-disabled"}


def test_an_explicit_weight_wins_over_the_capacity_types():
    text = edit(BURST_TEXT, "    capacity_type: spot\n", "    capacity_type: spot\n    weight: 90\n")
    from forge.components.karpenter import node_pool
    from tests.helpers import model
    cluster = model("h200-burst", text)
    first = next(n for n in cluster.nodes if n.pool and n.pool.name == "h200-spot")
    assert node_pool(first.pool, first)["spec"]["weight"] == 90


# ---- sourced facts -------------------------------------------------------------------------------

def test_every_instance_type_number_names_its_source():
    # main: one source line per instance type for every number, and no pods per node or price at all
    from forge.facts.hardware import INSTANCE_NUMBERS, INSTANCE_TYPES
    for key, inst in INSTANCE_TYPES.items():
        assert set(inst.numbers()) <= set(dict(inst.sources)), key
        assert set(dict(inst.sources)) <= set(INSTANCE_NUMBERS), key
    p5e, m7i = INSTANCE_TYPES["p5e.48xlarge"], INSTANCE_TYPES["m7i.8xlarge"]
    assert (p5e.max_pods, m7i.max_pods, m7i.on_demand_usd_per_hour) == (100, 234, 1.6128)
    assert p5e.on_demand_usd_per_hour is None  # not in Karpenter's us-east-1 table: not sourced, not guessed


def test_a_number_without_its_source_is_refused_at_its_line(tmp_path):
    import pytest

    from forge.files.datafile import DataFileError
    from forge.facts.hardware import CATALOGUE_FILE, load_catalogue
    text = CATALOGUE_FILE.read_text()
    start = text.index("  p5e.48xlarge:\n")
    cut = text.index('      max_pods: "', start)
    text = text[:cut] + text[text.index("\n", cut) + 1:]  # p5e's max_pods loses its source
    path = tmp_path / "hardware.yaml"
    path.write_text(text)
    with pytest.raises(DataFileError) as caught:
        load_catalogue(path, "hardware.yaml")
    (problem,) = [str(p) for p in caught.value.problems]
    line = text[:text.index("    max_pods: 100\n", start)].count("\n") + 1
    assert problem.startswith(f"hardware.yaml:{line}: instances.p5e.48xlarge.max_pods: no source for max_pods"), problem
