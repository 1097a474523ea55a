"""Flyte: quota arithmetic on both fleets, per project-domain objects, priorities, storage through
Alluxio, plugins, log links, and rejections (message and file:line)."""
from __future__ import annotations

from itertools import product
from urllib.parse import unquote

import pytest
from tests.helpers import (edit, generated, generated_dir, inventory_text, line_of, model, only_problem,
                                problems_of, rendered)

from forge.components.flyte import (Capacity, DomainSpec, Flyte, FlyteSettings, ProjectSpec, capacity, log_link,
                                    quotas)

FLEET = {"h200": Capacity(gpus=144, cpus=18 * 192, memory_gib=18 * 2048),
         "a100": Capacity(gpus=80, cpus=10 * 96, memory_gib=10 * 1024)}


def settings(cluster: str, text: str | None = None) -> FlyteSettings:
    return Flyte().settings(model(cluster, text))


def gpus(q: dict) -> int:
    return int(q["spec"]["hard"]["requests.nvidia.com/gpu"])


# ---- arithmetic ------------------------------------------------------------------------------------

@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_capacity_is_the_workload_nodes(cluster):
    assert capacity(model(cluster)) == FLEET[cluster]
    assert capacity(model(cluster)).gpus == model(cluster).gpu_count


@pytest.mark.parametrize("cluster, project, domain, expect", [
    # floor(capacity x project% x domain% / 10000)
    ("h200", "training", "production", (57, 1382, 14745)),  # 144*50*80 = 57.6; 3456*.4 = 1382.4; 36864*.4 = 14745.6
    ("h200", "research", "development", (1, 34, 368)),  # 144*10*10 = 1.44
    ("a100", "training", "production", (25, 307, 3276)),  # 80*40*80 = 25.6
    ("a100", "finetune", "staging", (2, 28, 307)),  # 80*30*10 = 2.4
])
def test_quota_formula(cluster, project, domain, expect):
    q = next(q for q in quotas(FLEET[cluster], settings(cluster)) if (q.project, q.domain) == (project, domain))
    assert (q.gpus, q.cpus, q.memory_gib) == expect


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_generated_quotas_never_hand_out_more_than_exists(cluster):
    objs = generated_dir(f"overlays/{cluster}/flyte", "resourcequota-")
    s = settings(cluster)
    assert len(objs) == len(s.projects) * len(s.domains) == 12
    cap = FLEET[cluster]
    assert sum(gpus(q) for q in objs) <= cap.gpus
    assert sum(int(q["spec"]["hard"]["requests.cpu"]) for q in objs) <= cap.cpus
    assert sum(int(q["spec"]["hard"]["requests.memory"].removesuffix("Gi")) for q in objs) <= cap.memory_gib
    assert sum(gpus(q) for q in objs) >= cap.gpus - len(objs)  # rounding down loses < 1 GPU per namespace


def test_h200_render_quotas_add_up_to_at_most_144_gpus():
    objs = [o for o in rendered("h200", "flyte") if o["kind"] == "ResourceQuota"]
    assert len(objs) == 12
    assert sum(gpus(q) for q in objs) == 138 <= 144


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_any_valid_shares_stay_within_capacity(cluster):
    """Every split of 100% in steps of 5 over 3 projects and 2 domains: never more than exists."""
    cap = FLEET[cluster]
    splits = [(a, b, 100 - a - b) for a in range(5, 91, 5) for b in range(5, 96 - a, 5) if 100 - a - b >= 5]
    for (p1, p2, p3), d1 in product(splits, range(5, 96, 5)):
        s = FlyteSettings.model_construct(
            projects=[ProjectSpec(name=f"p{i}", share_percent=x, priority_class="c") for i, x in enumerate((p1, p2, p3))],
            domains=[DomainSpec(name="d0", share_percent=d1), DomainSpec(name="d1", share_percent=100 - d1)])
        qs = quotas(cap, s)
        assert sum(q.gpus for q in qs) <= cap.gpus
        assert sum(q.cpus for q in qs) <= cap.cpus
        assert sum(q.memory_gib for q in qs) <= cap.memory_gib


# ---- per project-domain objects ---------------------------------------------------------------------------

@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_each_project_domain_has_namespace_quota_limits_and_priority(cluster):
    s = settings(cluster)
    objs = rendered(cluster, "flyte")
    by = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objs}
    classes = {p.name: p.priority_class for p in s.projects}
    for p, d in product(s.projects, s.domains):
        ns = f"{p.name}-{d.name}"
        labels = by[("Namespace", None, ns)]["metadata"]["labels"]
        # RDMA pods need IPC_LOCK, beyond baseline: fabric clusters enforce privileged, warn at baseline
        enforce = "privileged" if cluster == "h200" else "baseline"
        assert (labels["pod-security.kubernetes.io/enforce"], labels["pod-security.kubernetes.io/warn"]) == (enforce, "baseline")
        assert ("ResourceQuota", ns, "forge-quota") in by
        limits = by[("LimitRange", ns, "forge-defaults")]["spec"]["limits"][0]
        assert limits["defaultRequest"] == {"cpu": "1", "memory": "4Gi"}
        template = by[("PodTemplate", ns, "forge-default")]["template"]["spec"]
        assert template["priorityClassName"] == classes[p.name]
    # propeller's fallback template, in its own namespace: the default class
    assert by[("PodTemplate", None, "forge-default")]["template"]["spec"]["priorityClassName"] == s.default_priority_class
    project = generated(f"clusters/{cluster}/argocd/appproject.yaml")
    allowed = {d["namespace"] for d in project["spec"]["destinations"]}
    assert {f"{p.name}-{d.name}" for p, d in product(s.projects, s.domains)} <= allowed


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_values_storage_plugins_tolerations_projects(cluster):
    m = model(cluster)
    v = generated(f"overlays/{cluster}/flyte/values.yaml")
    s3 = v["configuration"]["storage"]
    assert s3["metadataContainer"] == s3["userDataContainer"] == m.settings.s3.buckets["flyte"]
    assert s3["providerConfig"]["s3"]["endpoint"] == "http://alluxio-s3.alluxio.svc.cluster.local:39999/api/v1/s3"
    assert s3["providerConfig"]["s3"]["authType"] == "iam"  # credentials from the Secret, below
    env = {e["name"]: e["valueFrom"]["secretKeyRef"]["name"] for e in v["deployment"]["extraEnvVars"]}
    assert env == {"AWS_ACCESS_KEY_ID": m.settings.s3.credentials_secret, "AWS_SECRET_ACCESS_KEY": m.settings.s3.credentials_secret}
    plugins = v["enabled_plugins"]["tasks"]["task-plugins"]
    assert {"container", "k8s-array", "pytorch", "mpi", "ray"} <= set(plugins["enabled-plugins"])
    # Added to the chart's own map (container, sidecar, container_array -> k8s-array), which Helm
    # merges in: the hydrated ConfigMap is checked for the whole map (Flyte.expected_in_hydrated).
    assert plugins["default-for-task-types"] == {"pytorch": "pytorch", "mpi": "mpi", "ray": "ray"}
    k8s = v["configuration"]["inline"]["plugins"]["k8s"]
    assert k8s["default-tolerations"] == m.gpu_tolerations == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert k8s["default-pod-template-name"] == "forge-default"
    s = settings(cluster)
    assert v["flyte-core-components"]["admin"]["seedProjects"] == [p.name for p in s.projects]
    assert [d["id"] for d in v["configuration"]["inline"]["domains"]] == [d.name for d in s.domains]
    assert v["deployment"]["image"] == {"repository": "cr.flyte.org/flyteorg/flyte-binary-release", "tag": "v1.16.8"}
    assert v["deployment"]["extraPodSpec"]["priorityClassName"] == "system-cluster-critical"
    assert v["configuration"]["inline"]["task_resources"]["limits"]["gpu"] == "8"


def test_log_link_points_at_grafana_explore_over_loki_with_flyte_placeholders():
    link = log_link(settings("h200"))["templateUris"][0]
    assert link.startswith("https://grafana.h200.exa.internal/explore?")
    # Flyte's placeholders must survive unencoded; the rest is URL-encoded JSON.
    for placeholder in ("{{ .namespace }}", "{{ .podName }}", "{{ .containerName }}", "{{ .podUnixStartTime }}"):
        assert placeholder in link
    pane = unquote(link.split("panes=", 1)[1])
    assert '"uid":"loki"' in pane
    assert 'namespace=\\"{{ .namespace }}\\", pod=\\"{{ .podName }}\\"' in pane


# ---- rejections ---------------------------------------------------------------------------------------------

def test_rejects_project_shares_over_100_percent():
    text = edit(inventory_text("h200"), "{name: research, share_percent: 10,", "{name: research, share_percent: 25,")
    p = only_problem(problems_of("h200", text), "components.flyte.projects")
    assert p.message == ("project shares add up to 115% (training 50 + finetune 20 + embeddings 20 + research 25): "
                         "at most 100% can be handed out")
    assert p.line == line_of(text, "    projects:")


def test_rejects_domain_shares_over_100_percent():
    text = edit(inventory_text("a100"), "{name: staging, share_percent: 10}", "{name: staging, share_percent: 30}")
    p = only_problem(problems_of("a100", text), "components.flyte.domains")
    assert p.message == ("domain shares add up to 120% (development 10 + staging 30 + production 80): "
                         "at most 100% can be handed out")
    assert p.line == line_of(text, "    domains:")


def test_rejects_a_share_over_100_on_its_own():
    text = edit(inventory_text("h200"), "{name: training, share_percent: 50,", "{name: training, share_percent: 150,")
    p = only_problem(problems_of("h200", text), "components.flyte.projects[0].share_percent")
    assert p.message == "input should be less than or equal to 100"
    assert p.line == line_of(text, "share_percent: 150")


def test_rejects_an_unknown_priority_class():
    text = edit(inventory_text("h200"), "priority_class: interactive,", "priority_class: interactve,")
    p = only_problem(problems_of("h200", text), "components.flyte.projects[3].priority_class")
    assert p.message == ("unknown priority class 'interactve' (expected one of: urgent-finetune, interactive, "
                         "default-training, batch-preprocessing)")
    assert p.line == line_of(text, "interactve")


def test_rejects_flyte_storage_that_bypasses_alluxio():
    text = edit(inventory_text("h200"), "buckets: [datasets, checkpoints, flyte]", "buckets: [datasets, checkpoints]")
    p = only_problem(problems_of("h200", text), "components.flyte")
    assert p.message == "Flyte's storage goes through Alluxio's S3 endpoint: list 'flyte' in components.alluxio.buckets"
    assert p.line == line_of(text, "  flyte:", whole=True)
