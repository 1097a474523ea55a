"""Kueue on both fleets: quotas within capacity per flavor and resource, a LocalQueue in every
Flyte namespace, priorities mapped from the PriorityClasses, the manager configuration, every
custom resource against Kueue's real CRDs, and the inventory rejections (message and file:line)."""
from __future__ import annotations

from fractions import Fraction

import pytest
import yaml
from tests.helpers import (CLUSTERS, edit, generated, generated_dir, inventory_text, line_of, model, needs_upstream,
                           only_problem, problems_of, rendered, upstream_data)

from forge.model.capacity import GPU, capacity
from forge.components.kueue import FRAMEWORKS, Kueue
from forge.components.multikueue import UNSERVED_FRAMEWORKS
from forge.components.scheduling import NODE_TEST_CLASS
from forge.validate.crd import CrdSchemas
from forge.validate.queues import queue_failures
from forge.validate.values import check_values

from tests.model.test_capacity import MIXED_H200


def kinds(cluster: str, kind: str, component: str = "kueue", cloud: bool = False) -> list[dict]:
    """The cluster's own queue objects; `cloud`: also a MultiKueue manager's cloud queues and
    flavors (tests/cloud/test_multikueue.py checks those)."""
    return [o for o in generated_dir(f"overlays/{cluster}/{component}") if o["kind"] == kind and (cloud or not is_cloud(o))]


def is_cloud(obj: dict) -> bool:
    """A cloud ClusterQueue (its MultiKueue admission check) or a cloud flavor (quota only, no nodes)."""
    spec = obj.get("spec") or {}
    return "admissionChecksStrategy" in spec or (obj["kind"] == "ResourceFlavor" and "nodeLabels" not in spec)


def nominal(cq: dict, flavor: str, resource: str) -> int:
    group = cq["spec"]["resourceGroups"][0]
    f = next(f for f in group["flavors"] if f["name"] == flavor)
    return int(str(next(r for r in f["resources"] if r["name"] == resource)["nominalQuota"]).removesuffix("Gi"))


# ---- quotas -------------------------------------------------------------------------------------------

def all_flavors_nominal(cqs: list[dict], resource: str) -> int:
    return sum(int(r["nominalQuota"]) for cq in cqs for f in cq["spec"]["resourceGroups"][0]["flavors"]
               for r in f["resources"] if r["name"] == resource)


@pytest.mark.parametrize("cluster, gpus, mig, slices", [("h200", 144, "nvidia.com/mig-1g.18gb", 112),
                                                        ("a100", 80, "nvidia.com/mig-1g.10gb", 28)])
def test_done_when_nominal_gpus_within_the_fleet_and_mig_has_its_own_quota(cluster, gpus, mig, slices):
    """Issue 13's Done-when: the nominal nvidia.com/gpu over all ClusterQueues is at most the
    fleet's GPUs (at most its whole GPUs: the mixed strategy never advertises a slice as one), and
    the MIG resource has its own nominal quotas."""
    cqs = kinds(cluster, "ClusterQueue")
    assert model(cluster).mig_strategy == "mixed"  # whole GPUs and slices coexist
    whole = capacity(model(cluster)).whole_gpus
    assert 0 < all_flavors_nominal(cqs, GPU) <= whole < gpus
    assert 0 < all_flavors_nominal(cqs, mig) <= slices
    assert all(mig in cq["spec"]["resourceGroups"][0]["coveredResources"] for cq in cqs)


def test_h200_nominal_gpus_at_most_144_and_mig_has_its_own_quota():
    cqs = kinds("h200", "ClusterQueue")
    assert sorted(cq["metadata"]["name"] for cq in cqs) == ["embeddings", "finetune", "research", "training"]
    whole = sum(nominal(cq, "h200-141gb", GPU) for cq in cqs)
    slices = sum(nominal(cq, "h200-141gb-all-1g", "nvidia.com/mig-1g.18gb") for cq in cqs)
    assert whole == 128  # every whole GPU of the 16 uncut nodes: largest remainder loses none
    assert all(nominal(cq, "h200-141gb-all-1g", GPU) == 0 for cq in cqs)  # the cut nodes have no whole GPU
    assert all(nominal(cq, "h200-141gb", "nvidia.com/mig-1g.18gb") == 0 for cq in cqs)
    assert slices == 112  # every 1g.18gb slice of the 2 cut nodes, 7 per GPU
    assert whole + Fraction(slices, 7) <= 144  # in GPUs: never more than the fleet has
    research = next(cq for cq in cqs if cq["metadata"]["name"] == "research")
    assert nominal(research, "h200-141gb-all-1g", "nvidia.com/mig-1g.18gb") == 45  # flavor_shares: 40 % of 112 = 44.8


def test_a100_nominal_gpus_within_whole_gpus_and_mig_quota():
    cqs = kinds("a100", "ClusterQueue")
    flavors = ("a100-80gb", "a100-80gb-half-1g")
    whole = sum(nominal(cq, f, GPU) for cq in cqs for f in flavors)
    assert whole == 72 + 4 == 76 < 80  # mixed strategy: the 4 cut GPUs of a100-gpu-10 are not nvidia.com/gpu
    assert sum(nominal(cq, "a100-80gb-half-1g", "nvidia.com/mig-1g.10gb") for cq in cqs) == 28
    assert all(nominal(cq, "a100-80gb", "nvidia.com/mig-1g.10gb") == 0 for cq in cqs)


def test_mixed_fixture_no_gpu_quota_above_the_whole_gpus():
    m = model("h200", edit(inventory_text("h200"), *MIXED_H200))
    cqs = [o for o in Kueue().manifests(m) if o["kind"] == "ClusterQueue" and not is_cloud(o)]
    assert sum(nominal(cq, f, GPU) for cq in cqs for f in ("h200-141gb", "h200-141gb-all-1g")) <= 128
    for profile, total in (("1g.18gb", 32), ("2g.35gb", 16), ("3g.71gb", 16)):
        got = sum(nominal(cq, "h200-141gb-all-1g", f"nvidia.com/mig-{profile}") for cq in cqs)
        assert 0 < got <= total


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_flavor_and_resource_within_capacity(cluster):
    cap = capacity(model(cluster))
    quotas = Kueue().facts(model(cluster)).quotas
    for pool in cap.pools:
        for resource, amount in pool.resources.items():
            assert sum(q.flavors[pool.flavor][resource].nominal for q in quotas) <= amount
            for q in quotas:
                quota = q.flavors[pool.flavor][resource]
                assert quota.nominal + quota.borrowing <= amount and quota.lending <= quota.nominal


def test_queue_shape_cohort_fair_sharing_and_preemption():
    cqs = {cq["metadata"]["name"]: cq["spec"] for cq in kinds("h200", "ClusterQueue")}
    assert {s["cohortName"] for s in cqs.values()} == {"forge"}
    assert cqs["training"]["namespaceSelector"] == {"matchLabels": {"forge.exa.ai/flyte-project": "training"}}
    assert cqs["training"]["resourceGroups"][0]["coveredResources"] == [
        "cpu", "memory", GPU, "nvidia.com/mig-1g.18gb", "rdma/rdma_network", "rdma/rdma_storage"]
    # urgent-finetune pre-empts (its project reclaims its quota); batch-preprocessing never does
    assert cqs["finetune"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    assert cqs["embeddings"]["preemption"] == {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"}
    finetune = next(f for f in cqs["finetune"]["resourceGroups"][0]["flavors"] if f["name"] == "h200-141gb")
    gpu = next(r for r in finetune["resources"] if r["name"] == GPU)
    assert gpu == {"name": GPU, "nominalQuota": "26", "borrowingLimit": "102", "lendingLimit": "26"}  # lends all it leaves idle


def test_batch_holds_no_quota_where_the_pre_train_must_fit():
    """Kueue takes back from another queue only what it borrows: pre-emptible batch (embeddings,
    below the whole-pool project training) holds no nominal quota on a whole-GPU pool, its 25 GPUs
    go to training (64 + 25), and its queue's fair-sharing weight is 0 (first taken back from).
    The MIG pool, no whole-pool concern, keeps the shares."""
    cqs = {cq["metadata"]["name"]: cq["spec"] for cq in kinds("h200", "ClusterQueue")}

    def quota(queue, flavor, resource=GPU):
        group = next(f for f in cqs[queue]["resourceGroups"][0]["flavors"] if f["name"] == flavor)
        return next(r for r in group["resources"] if r["name"] == resource)

    assert quota("embeddings", "h200-141gb") == {"name": GPU, "nominalQuota": "0", "borrowingLimit": "128", "lendingLimit": "0"}
    assert quota("training", "h200-141gb")["nominalQuota"] == "89"
    assert sum(int(quota(q, "h200-141gb")["nominalQuota"]) for q in cqs) == 128
    assert quota("embeddings", "h200-141gb-all-1g", "nvidia.com/mig-1g.18gb")["nominalQuota"] == "22"
    assert cqs["embeddings"]["fairSharing"] == {"weight": "0"}
    assert [q for q in cqs if "fairSharing" in cqs[q]] == ["embeddings"]


# ---- flavors, topology, priorities, local queues ----------------------------------------------------

@pytest.mark.parametrize("cluster", CLUSTERS)
def test_flavors_select_nodes_by_labels_nfd_sets(cluster):
    m = model(cluster)
    rules = {r["metadata"]["name"]: r for r in generated_dir(f"overlays/{cluster}/node-feature-discovery", "nodefeaturerule-")}
    for flavor in kinds(cluster, "ResourceFlavor"):
        selector = flavor["spec"]["nodeLabels"]
        nodes = [n for n in m.workload_nodes if n.gpu and all(n.labels.get(k) == v for k, v in selector.items())]
        assert nodes == list(capacity(m).pool(flavor["metadata"]["name"]).nodes)
        for node in nodes:  # node-feature-discovery puts exactly these labels (and the rack) on the node
            labels = rules[f"forge-node-{node.name}"]["spec"]["rules"][0]["labels"]
            assert selector.items() <= labels.items() and labels["forge.exa.ai/rack"] == node.rack
        # topology-aware only where the nodes exist (forge.components.kueue_cloud: never a Karpenter pool's)
        assert flavor["spec"].get("topologyName") == (None if m.cloud else "racks")
        assert flavor["spec"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert [t["spec"] for t in kinds(cluster, "Topology")] == ([] if m.cloud else [
        {"levels": [{"nodeLabel": "forge.exa.ai/rack"}, {"nodeLabel": "kubernetes.io/hostname"}]}])


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_workload_priority_classes_mirror_the_priority_classes(cluster):
    pcs = {o["metadata"]["name"]: o["value"] for o in generated_dir(f"overlays/{cluster}/scheduling", "priorityclass-")
           if o["metadata"]["name"] != NODE_TEST_CLASS}  # the node tests' class: no workload's
    wpcs = {o["metadata"]["name"]: o["value"] for o in kinds(cluster, "WorkloadPriorityClass")}
    assert wpcs == pcs and wpcs["urgent-finetune"] > wpcs["batch-preprocessing"]
    assert not [n for n in wpcs if n.startswith("system-")]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_flyte_namespace_has_a_local_queue(cluster):
    namespaces = [o for o in generated_dir(f"overlays/{cluster}/flyte", "namespace-")]
    queues = {(q["metadata"]["namespace"], q["metadata"]["name"]): q["spec"]["clusterQueue"]
              for q in kinds(cluster, "LocalQueue", "flyte")}
    cloud = cluster == "h200"  # the MultiKueue manager of h200-burst: LocalQueue cloud too
    assert len(namespaces) == 12 and len(queues) == 12 * (2 if cloud else 1)
    for ns in namespaces:
        project = ns["metadata"]["labels"]["forge.exa.ai/flyte-project"]
        assert queues[(ns["metadata"]["name"], "default")] == project
        assert queues.get((ns["metadata"]["name"], "cloud")) == (f"{project}-cloud" if cloud else None)
    values = generated(f"overlays/{cluster}/flyte/values.yaml")
    assert values["configuration"]["inline"]["plugins"]["k8s"]["default-labels"] == {"forge.exa.ai/workload": "flyte", "kueue.x-k8s.io/queue-name": "default"}


# ---- the chart's values and the CRDs ------------------------------------------------------------------

@pytest.mark.parametrize("cluster", CLUSTERS)
def test_manager_config_integrations_fair_sharing_and_namespaces(cluster):
    values = generated(f"overlays/{cluster}/kueue/values.yaml")
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    frameworks = config["integrations"]["frameworks"]
    assert {"batch/job", "pod", "kubeflow.org/pytorchjob", "ray.io/rayjob", "ray.io/raycluster"} <= set(frameworks)
    # a MultiKueue manager leaves out the kinds no worker serves (forge.components.multikueue)
    assert [f for f in FRAMEWORKS if cluster != "h200" or f not in UNSERVED_FRAMEWORKS] == frameworks
    assert config["fairSharing"]["preemptionStrategies"]  # present: fair sharing on
    assert config["managedJobsNamespaceSelector"] == {"matchExpressions": [{"key": "forge.exa.ai/flyte-project", "operator": "Exists"}]}
    # 20m on premises; 60m on the cloud cluster and its MultiKueue manager (tests/cloud/test_burst_works.py)
    assert config["waitForPodsReady"]["timeout"] == ("60m" if cluster in ("h200", "h200-burst") else "20m")
    assert values["controllerManager"]["manager"]["priorityClassName"] == "system-cluster-critical"
    app = generated(f"clusters/{cluster}/argocd/apps/application-kueue.yaml")
    assert app["spec"]["sources"][0] == {"repoURL": "registry.k8s.io/kueue/charts", "chart": "kueue", "targetRevision": "0.19.2",
                                         "helm": {"releaseName": "kueue", "valueFiles": [f"$values/overlays/{cluster}/kueue/values.yaml"]}}
    waves = {c: int(generated(f"clusters/{cluster}/argocd/apps/application-{c}.yaml")["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
             for c in ("training-operator", "kuberay-operator", "kueue", "flyte")}
    assert waves["training-operator"] < waves["kueue"] < waves["flyte"] and waves["kuberay-operator"] < waves["kueue"]


@needs_upstream
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_values_match_the_chart_and_objects_the_crds(cluster):
    data = upstream_data("kueue-0.19.2")
    assert check_values(generated(f"overlays/{cluster}/kueue/values.yaml"), data, Kueue.declared_values) == []
    crds = CrdSchemas()
    crds.add_dir(data / "crds")
    objs = [o for o in rendered(cluster, "kueue") + rendered(cluster, "flyte") if o["apiVersion"].startswith("kueue.x-k8s.io/")]
    manager = {"AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster"} if cluster == "h200" else set()
    assert {o["kind"] for o in objs} == {"ResourceFlavor", "ClusterQueue", "Topology", "WorkloadPriorityClass", "LocalQueue", *manager}
    for obj in objs:
        assert crds.validate(obj) == [], obj["metadata"]["name"]
    bad = next(o for o in objs if o["kind"] == "ClusterQueue")
    bad["spec"]["cohort"] = "v1beta1-name"  # renamed cohortName in v1beta2: the CRD must refuse it
    assert crds.validate(bad) != []


# ---- rejections (inventory) and cross-object checks (rendered output) ----------------------------------

def test_rejects_flavor_shares_over_capacity():
    text = edit(inventory_text("h200"), "research: {flavor_shares: {all-1g: 40}}", "research: {flavor_shares: {all-1g: 70}}")
    p = only_problem(problems_of("h200", text), "components.kueue.projects.research.flavor_shares.all-1g")
    assert p.message.startswith("nominal quotas of flavor 'h200-141gb-all-1g' exceed its capacity (cpu 499 > 384, memory 5324Gi > 4096Gi, "
                                "nvidia.com/mig-1g.18gb 145 > 112, ")
    assert p.message.endswith("its shares add up to 130%")
    assert p.line == line_of(text, "all-1g: 70")


@pytest.mark.parametrize("cluster, project", [("h200", "training"), ("a100", "training")])
def test_the_largest_project_reaches_every_whole_gpu_pool_with_the_cohort_idle(cluster, project):
    """Issue 20's first blocker: with floor() quotas (126 of 128) and a queue lending half, the
    pre-train queue could never hold a whole pool. Nominal quotas now add up to each pool's
    capacity and every queue lends what it leaves idle."""
    from forge.model.queues import cohort_reach

    facts = Kueue().facts(model(cluster))
    for pool in facts.capacity.pools:
        for resource, amount in pool.resources.items():
            assert sum(q.flavors[pool.flavor][resource].nominal for q in facts.quotas) == amount, (pool.flavor, resource)
            if GPU in pool.resources and resource not in pool.slices:
                assert cohort_reach(list(facts.quotas), pool.flavor, resource, project) == amount, (pool.flavor, resource)


def test_largest_remainder_hands_out_exactly_the_shares_part():
    from forge.model.queues import largest_remainder

    assert largest_remainder(128, [50, 20, 20, 10]) == [64, 26, 25, 13]  # floor() gave 64, 25, 25, 12: 126
    assert largest_remainder(112, [20, 20, 20, 40]) == [23, 22, 22, 45]
    assert largest_remainder(10, [33, 33, 33]) == [3, 3, 3]  # 99 % of 10 is 9.9: 9 handed out, never more
    assert largest_remainder(7, [100]) == [7] and largest_remainder(0, [50, 50]) == [0, 0]


def test_rejects_a_lending_limit_that_keeps_the_pretrain_queue_short_of_a_whole_pool():
    text = edit(inventory_text("h200"), "  kueue:\n    projects:", "  kueue:\n    projects:\n      finetune: {lending_limit_percent: 50}")
    p = only_problem(problems_of("h200", text), "components.kueue.projects.finetune.lending_limit_percent")
    assert p.message.startswith("queue training cannot hold the whole pool 'h200-141gb' (16 nodes): with the others idle it "
                                "falls 308 cpu, 3277Gi memory, 13 nvidia.com/gpu, ")
    assert "a job on every node is never admitted" in p.message
    assert p.line == line_of(text, "finetune: {lending_limit_percent: 50}")
    # Naming no project lifts the rule: a fleet whose pools are partitioned on purpose.
    opted_out = edit(text, "  kueue:\n    projects:", "  kueue:\n    whole_pool_projects: []\n    projects:")
    assert model("h200", opted_out).name == "h200"  # loads: no problem at all
    unknown = edit(text, "  kueue:\n    projects:", "  kueue:\n    whole_pool_projects: [trainin]\n    projects:")
    p = only_problem(problems_of("h200", unknown), "components.kueue.whole_pool_projects[0]")
    assert p.message.startswith("unknown Flyte project 'trainin'")


def test_rejects_unknown_flavor_and_project():
    text = edit(inventory_text("a100"), "research: {flavor_shares: {half-1g: 40}}", "reserch: {flavor_shares: {half-2g: 40}}")
    problems = problems_of("a100", text)
    p = only_problem(problems, "components.kueue.projects.reserch")
    assert p.message == "unknown Flyte project 'reserch' (expected one of: training, finetune, embeddings, research)"
    assert p.line == line_of(text, "reserch:")
    p = only_problem(problems, "components.kueue.projects.reserch.flavor_shares.half-2g")
    assert p.message == ("no GPU pool nor MIG layout in use 'half-2g' on this cluster (pools: a100-80gb, a100-80gb-half-1g; "
                         "layouts: half-1g): drop or rename this share")


def test_rejects_a_workload_priority_class_without_priority_class():
    text = edit(inventory_text("h200"), "  kueue:\n    projects:", "  kueue:\n    priority_classes: [urgent-finetune, urgnt]\n    projects:")
    p = only_problem(problems_of("h200", text), "components.kueue.priority_classes[1]")
    assert p.message.startswith("no PriorityClass 'urgnt' in components.scheduling (expected one of: urgent-finetune,")
    assert p.line == line_of(text, "priority_classes: [urgent-finetune, urgnt]")


def test_rejects_a_rack_label_contradicting_the_rack():
    text = edit(inventory_text("h200"), "      exa.ai/pool: interactive\n", "      exa.ai/pool: interactive\n      forge.exa.ai/rack: h200-r04\n", count=2)
    problems = [p for p in problems_of("h200", text) if p.path.endswith("labels.forge.exa.ai/rack")]
    assert [p.path for p in problems] == ["nodes[19].labels.forge.exa.ai/rack", "nodes[20].labels.forge.exa.ai/rack"]
    assert problems[0].message == ("label forge.exa.ai/rack=h200-r04 contradicts the node's rack 'h200-r05': "
                                   "Kueue's Topology places jobs by this label")
    assert [p.line for p in problems] == [line_of(text, "forge.exa.ai/rack: h200-r04", nth=1), line_of(text, "forge.exa.ai/rack: h200-r04", nth=2)]


def test_rejects_kueue_without_flyte():
    text = inventory_text("a100")
    start, end = text.index("  # Flyte (forge.components.flyte)"), text.index("  # Queues (forge.components.kueue)")
    text = text[:start] + text[end:]
    p = only_problem(problems_of("a100", text), "components.kueue")
    assert p.message == "Kueue's ClusterQueues are Flyte's projects: add components.flyte"
    assert p.line == line_of(text, "  kueue:", whole=True)


def test_cross_object_checks_fire_on_broken_renders():
    m = model("h200")
    objects = {"kueue": Kueue().manifests(m), "flyte": [o for o in rendered("h200", "flyte")],
               "scheduling": rendered("h200", "scheduling")}
    assert queue_failures(m, objects) == []
    objects["flyte"] = [o for o in objects["flyte"] if not (o["kind"] == "LocalQueue" and o["metadata"]["namespace"] == "research-staging")]
    wpc = next(o for o in objects["kueue"] if o["kind"] == "WorkloadPriorityClass" and o["metadata"]["name"] == "interactive")
    wpc["value"] = 1
    topology = next(o for o in objects["kueue"] if o["kind"] == "Topology")
    topology["spec"]["levels"].insert(0, {"nodeLabel": "forge.exa.ai/row"})
    lines = sorted(f.line() for f in queue_failures(m, objects))
    assert lines[0] == "h200 / flyte / Namespace/research-staging / - / runs Flyte executions but has no LocalQueue 'default'"
    assert "h200 / kueue / WorkloadPriorityClass/interactive / value / 1 differs from PriorityClass 'interactive' (50000)" in lines
    assert ("h200 / kueue / ResourceFlavor/h200-141gb / spec.topologyName / node h200-gpu-01 lacks the Topology's "
            "level label(s) forge.exa.ai/row") in lines


def test_flavor_shares_by_flavor_name_or_by_mig_layout_agree():
    by_layout = Kueue().facts(model("h200")).quotas
    text = edit(inventory_text("h200"), "{flavor_shares: {all-1g:", "{flavor_shares: {h200-141gb-all-1g:", count=2)
    by_flavor = Kueue().facts(model("h200", text)).quotas
    assert by_flavor == by_layout
    assert by_flavor[3].flavors["h200-141gb-all-1g"]["nvidia.com/mig-1g.18gb"].nominal == 45  # research: 40 % of 112 slices
    assert by_flavor[3].flavors["h200-141gb"][GPU].nominal == 13  # its share_percent (10 %) elsewhere: 12.8
