"""MultiKueue (docs/burst.md): h200 is the manager of its burst cluster h200-burst, named by
components.kueue.burst.cluster; a project's job reaches the cloud by naming LocalQueue `cloud`.

What is checked: the manager's objects (AdmissionCheck, MultiKueueConfig, MultiKueueCluster, the
kubeconfig's ExternalSecret, flavors, the <project>-cloud ClusterQueues with the burst cluster's
own quotas), the LocalQueues on both sides, the worker's ServiceAccount, `forge queues`, every bad
link refused at its file:line (and exit 2 through the CLI, nothing written), and that a change in
the burst cluster's pools regenerates the manager's cloud queues (its generate and plan key)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from forge.fleet import links, load_plan_text
from forge.generate.incremental import cluster_keys
from forge.fleet import inventory_paths

from tests.helpers import REPO, copy_repo_inputs, edit, forge, generated, inventory_text, line_of, problems

FILE = "clusters/h200/inventory.yaml"
TEXT = inventory_text("h200")
LINK = "    burst: {cluster: h200-burst}\n"
FIELD = "components.kueue.burst.cluster"
PROJECTS = ("training", "finetune", "embeddings", "research")
DOMAINS = ("development", "staging", "production")


def _link_problems(text: str, neighbours: links.Neighbours | None = None, file: str = FILE) -> list[str]:
    found = problems(text, file) if neighbours is None else _problems_with(text, file, neighbours)
    return [p for p in found if f": {FIELD}: " in p]


def _problems_with(text: str, file: str, neighbours: links.Neighbours) -> list[str]:
    from forge.errors import InventoryError

    with pytest.raises(InventoryError) as caught:
        load_plan_text(text, file, neighbours=neighbours)
    return [str(p) for p in caught.value.problems]


# ---- bad links, at their line ----------------------------------------------------------------------

@pytest.mark.parametrize("name, words", [
    ("h200-cloud", "no cluster 'h200-cloud' (no clusters/h200-cloud/inventory.yaml); expected a cloud cluster of the fleet, one of: a100, h200-burst"),
    ("a100", "cluster 'a100' is on premises (no cluster.cloud in clusters/a100/inventory.yaml): a burst cluster is a cloud cluster"),
    ("h200", "'h200' is this cluster: a MultiKueue manager is never its own worker"),
])
def test_a_bad_burst_cluster_is_refused_at_its_line(name, words):
    text = edit(TEXT, LINK, f"    burst: {{cluster: {name}}}\n")
    found = _link_problems(text)
    assert len(found) == 1, problems(text, FILE)
    assert found[0].startswith(f"{FILE}:{line_of(text, f'burst: {{cluster: {name}}}')}: {FIELD}: "), found
    assert words in found[0], found[0]


def test_a_burst_link_on_a_cloud_cluster_is_refused():
    file = "clusters/h200-burst/inventory.yaml"
    text = edit(inventory_text("h200-burst"), "  kueue: {}\n", "  kueue:\n    burst: {cluster: h200}\n")
    found = _link_problems(text, file=file)
    assert len(found) == 1 and found[0].startswith(f"{file}:{line_of(text, 'burst: {cluster: h200}')}: {FIELD}: "), found
    assert "a cloud cluster is a burst cluster, not a MultiKueue manager" in found[0]


def test_a_bad_shape_of_the_link_names_its_field():
    text = edit(TEXT, LINK, "    burst: {cluster: H200_Burst}\n")
    assert any(p.startswith(f"{FILE}:{line_of(text, 'H200_Burst')}: {FIELD}: ") for p in problems(text, FILE))
    text = edit(TEXT, LINK, "    burst: {name: h200-burst}\n")
    assert any(p.startswith(f"{FILE}:{line_of(text, 'name: h200-burst')}: components.kueue.burst") for p in problems(text, FILE))


def _fleet_copy(tmp_path: Path, burst_edit=None) -> links.Neighbours:
    clusters = tmp_path / "clusters"
    shutil.copytree(REPO / "clusters", clusters, ignore=shutil.ignore_patterns("argocd", "overrides"))
    if burst_edit:
        path = clusters / "h200-burst" / "inventory.yaml"
        path.write_text(burst_edit(path.read_text()))
    return links.on_disk(clusters)


def test_a_burst_cluster_without_a_project_of_the_manager_is_refused(tmp_path: Path):
    renamed = lambda t: edit(t, "      - {name: research,", "      - {name: evaluation,").replace("[research, training]", "[evaluation, training]")  # noqa: E731
    neighbours = _fleet_copy(tmp_path, renamed)
    found = _link_problems(TEXT, neighbours)
    assert len(found) == 1 and found[0].startswith(f"{FILE}:{line_of(TEXT, LINK.strip())}: {FIELD}: "), found
    assert "cluster 'h200-burst' has no Flyte project 'research': MultiKueue creates each job in the worker's namespace" in found[0]


def test_a_burst_cluster_without_kueue_or_with_problems_is_refused(tmp_path: Path):
    neighbours = _fleet_copy(tmp_path, lambda t: edit(t, "  kueue: {}\n", ""))
    found = _link_problems(TEXT, neighbours)
    assert len(found) == 1 and "cluster 'h200-burst' runs no Kueue" in found[0], found
    neighbours = _fleet_copy(tmp_path / "b", lambda t: edit(t, "    max_count: 100\n", "    max_count: 0\n"))
    found = _link_problems(TEXT, neighbours)
    assert len(found) == 1 and "burst cluster 'h200-burst': clusters/h200-burst/inventory.yaml has 1 problem" in found[0], found
    assert "node_pools[1].max_count" in found[0] and "fix it first" in found[0]


def test_the_cli_refuses_a_bad_link_with_one_line_and_exit_2(tmp_path: Path):
    repo = copy_repo_inputs(tmp_path / "repo")
    text = edit(TEXT, LINK, "    burst: {cluster: a100}\n")
    (repo / FILE).write_text(text)
    result = forge(repo, "generate")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert lines[0].startswith(f"error: {FILE}:{line_of(text, 'burst: {cluster: a100}')}: {FIELD}: cluster 'a100' is on premises"), result.output
    assert not (repo / "overlays").exists()


# ---- what the manager and the worker get -----------------------------------------------------------

def _kueue(cluster: str, name: str) -> dict:
    return generated(f"overlays/{cluster}/kueue/{name}.yaml")


def test_the_manager_objects_chain_to_the_worker_kubeconfig_from_the_secret_store():
    check = _kueue("h200", "admissioncheck-h200-burst")
    assert check["spec"] == {"controllerName": "kueue.x-k8s.io/multikueue",
                             "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "h200-burst"}}
    assert _kueue("h200", "multikueueconfig-h200-burst")["spec"] == {"clusters": ["h200-burst"]}
    source = _kueue("h200", "multikueuecluster-h200-burst")["spec"]["clusterSource"]
    assert source == {"kubeConfig": {"locationType": "Secret", "location": "multikueue-h200-burst"}}
    secret = _kueue("h200", "externalsecret-multikueue-h200-burst")
    assert secret["metadata"] == {"name": "multikueue-h200-burst", "namespace": "kueue-system"}
    assert secret["spec"]["target"]["template"]["data"] == {"kubeconfig": '{{ index . "kubeconfig" }}'}
    assert secret["spec"]["data"] == [{"secretKey": "kubeconfig", "remoteRef": {"key": "forge/h200/multikueue", "property": "kubeconfig"}}]
    config = yaml.safe_load(generated("overlays/h200/kueue/values.yaml")["managerConfig"]["controllerManagerConfigYaml"])
    assert config["multiKueue"]["origin"] == "multikueue"
    burst = yaml.safe_load(generated("overlays/h200-burst/kueue/values.yaml")["managerConfig"]["controllerManagerConfigYaml"])
    assert "multiKueue" not in burst  # a worker needs no manager section
    assert not list((REPO / "overlays/a100/kueue").glob("admissioncheck-*"))


def _quotas(queue: dict) -> dict:
    return {(f["name"], r["name"]): (r["nominalQuota"], r["borrowingLimit"], r["lendingLimit"])
            for g in queue["spec"]["resourceGroups"] for f in g["flavors"] for r in f["resources"]}


@pytest.mark.parametrize("project", PROJECTS)
def test_each_cloud_queue_is_the_burst_clusters_queue_of_its_project(project):
    cloud = _kueue("h200", f"clusterqueue-{project}-cloud")
    own = _kueue("h200-burst", f"clusterqueue-{project}")
    assert cloud["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "h200-burst"}]}
    assert cloud["spec"]["cohortName"] == "h200-burst"  # never borrows the on-premises cohort's GPUs
    assert cloud["spec"]["namespaceSelector"] == own["spec"]["namespaceSelector"]
    assert cloud["spec"]["preemption"] == own["spec"]["preemption"]
    assert _quotas(cloud) == {(f"h200-burst-{f}", r): q for (f, r), q in _quotas(own).items()}
    for flavor in {f for f, _ in _quotas(cloud)}:
        assert _kueue("h200", f"resourceflavor-{flavor}")["spec"] == {}  # quota only: no nodes of h200, no topology


def test_the_training_cloud_queue_reaches_the_whole_burst_pool():
    quotas = _quotas(_kueue("h200", "clusterqueue-training-cloud"))
    nominal, borrowing, _ = quotas[("h200-burst-h200-141gb", "nvidia.com/gpu")]
    assert int(nominal) + int(borrowing) == 928  # 116 p5e.48xlarge (reserved and spot) x 8: a 100-node job is admissible


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("project", PROJECTS)
def test_local_queue_cloud_in_every_namespace_of_both_sides(project, domain):
    ns = f"{project}-{domain}"
    manager = generated(f"overlays/h200/flyte/localqueue-{ns}-cloud.yaml")
    assert (manager["metadata"]["name"], manager["metadata"]["namespace"], manager["spec"]) == ("cloud", ns, {"clusterQueue": f"{project}-cloud"})
    worker = generated(f"overlays/h200-burst/flyte/localqueue-{ns}-cloud.yaml")
    assert (worker["metadata"]["name"], worker["metadata"]["namespace"], worker["spec"]) == ("cloud", ns, {"clusterQueue": project})
    assert generated(f"overlays/h200/flyte/localqueue-{ns}-default.yaml")["spec"] == {"clusterQueue": project}


# Kueue's integration -> the resource MultiKueue watches on the worker
INTEGRATED = {"batch/job": ("batch", "jobs"), "pod": ("", "pods"), "kubeflow.org/pytorchjob": ("kubeflow.org", "pytorchjobs"),
              "kubeflow.org/mpijob": ("kubeflow.org", "mpijobs"), "ray.io/rayjob": ("ray.io", "rayjobs"),
              "ray.io/raycluster": ("ray.io", "rayclusters"), "ray.io/rayservice": ("ray.io", "rayservices"),
              "deployment": ("apps", "deployments"), "statefulset": ("apps", "statefulsets")}


def test_the_worker_lets_the_managers_service_account_watch_every_integrated_kind():
    """MultiKueue watches every kind the manager integrates on each worker; one it may not watch
    keeps the worker inactive (the fleet in a box: `rayservices.ray.io is forbidden`), and one the
    worker does not serve too (`no matches for kind "LeaderWorkerSet"`)."""
    role = _kueue("h200-burst", "clusterrole-multikueue-worker")
    allowed = {(r["apiGroups"][0], res): set(r["verbs"]) for r in role["rules"] for res in r["resources"]}
    config = yaml.safe_load(generated("overlays/h200/kueue/values.yaml")["managerConfig"]["controllerManagerConfigYaml"])
    for framework in config["integrations"]["frameworks"]:
        assert framework in INTEGRATED, f"{framework}: a kind no forge cluster serves, MultiKueue would wait for it"
        assert {"create", "delete", "get", "list", "watch"} <= allowed[INTEGRATED[framework]], framework
    assert {"create", "delete", "get", "list", "watch"} <= allowed[("kueue.x-k8s.io", "workloads")]
    assert {"patch", "update"} <= allowed[("kueue.x-k8s.io", "workloads/status")]
    binding = _kueue("h200-burst", "clusterrolebinding-multikueue-worker")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "multikueue", "namespace": "kueue-system"}]
    token = _kueue("h200-burst", "secret-multikueue")
    assert token["type"] == "kubernetes.io/service-account-token" and "data" not in token
    assert not (REPO / "overlays/h200/kueue/serviceaccount-multikueue.yaml").exists()  # on premises: no worker


def test_forge_queues_shows_the_cloud_queues(tmp_path: Path):
    result = forge(REPO, "queues", "h200")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "cloud queues: MultiKueue to h200-burst" in out
    assert "queue training-cloud (share 50% on h200-burst)" in out
    assert any(line.split()[:2] == ["h200-burst-h200-141gb", "nvidia.com/gpu"] and line.split()[-2:] == ["928", "928"]
               for line in out.split("queue training-cloud")[1].splitlines())
    import json

    data = json.loads(forge(REPO, "queues", "h200", "-o", "json").output)
    assert data["cloud"]["burst_cluster"] == "h200-burst" and data["cloud"]["local_queue"] == "cloud"
    training = next(p for p in data["cloud"]["projects"] if p["project"] == "training")
    assert training["flavors"]["h200-burst-h200-141gb"]["nvidia.com/gpu"]["reach"] == 928
    assert "cloud" not in json.loads(forge(REPO, "queues", "h200-burst", "-o", "json").output)


# ---- the burst inventory is an input of the manager ------------------------------------------------

def test_a_change_in_the_burst_pools_regenerates_the_managers_cloud_queues(tmp_path: Path):
    repo = copy_repo_inputs(tmp_path / "repo")
    assert forge(repo, "generate").exit_code == 0
    before = cluster_keys(repo, inventory_paths(repo))
    burst = repo / "clusters/h200-burst/inventory.yaml"
    burst.write_text(edit(burst.read_text(), "    max_count: 100\n", "    max_count: 50\n"))
    result = forge(repo, "generate")  # incremental: only clusters whose key changed are built
    assert result.exit_code == 0, result.output
    queue = yaml.safe_load((repo / "overlays/h200/kueue/clusterqueue-training-cloud.yaml").read_text())
    nominal, borrowing, _ = _quotas(queue)[("h200-burst-h200-141gb", "nvidia.com/gpu")]
    # (50 + 16 spot) x 8 GPUs; nominal: training's 50 % plus the 20 % of embeddings, which it outranks
    # as a whole-pool project (nominal 0 on whole-GPU pools): 70 % (369.6), by largest remainder
    assert (nominal, int(nominal) + int(borrowing)) == ("369", 528)
    after = cluster_keys(repo, inventory_paths(repo))
    assert after["h200"] != before["h200"] and after["a100"] == before["a100"]  # h200's generate and plan key
    assert forge(repo, "check").exit_code == 0  # what the incremental generate wrote is what a full one gives


def test_a_multi_node_pytorch_job_on_the_cloud_queue_passes_the_rails_policy():
    """h200 refuses multi-node PyTorchJobs without its RDMA template; one on the cloud queue runs
    on h200-burst and is held to its EFA instead (the fleet in a box refused such a job before;
    tests/cloud/test_burst_works.py and tests/twin/test_admission_fences.py hold the EFA side)."""
    policy = generated("overlays/h200/flyte/validatingadmissionpolicy-forge-multinode-pytorch-rdma.yaml")
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    assert "object.metadata.labels['kueue.x-k8s.io/queue-name'] == 'cloud'" in variables["cloud"]
    assert "object.metadata.labels['forge.exa.ai/fabric'] == 'none'" in variables["optedOut"]
    rails, efa = (v["expression"] for v in policy["spec"]["validations"])
    assert "|| variables.cloud ||" in rails and "!variables.cloud || variables.cloudFabric" in efa
