"""training-operator and KubeRay: their own Applications, synced before Flyte; the custom
resources Flyte's plugins create validate against the operators' upstream CRDs; every generated
Application, values file and manifest of this area validates against its schema."""
from __future__ import annotations

import copy
import json
import subprocess

import pytest
import yaml
from tests.helpers import CLUSTERS, REPO, generated, needs_upstream, rendered, upstream_data

from forge.facts.versions import chart_pins
from forge.components import COMPONENTS
from forge.components.alluxio import Alluxio
from forge.files.emit import labels_for
from forge.validate.crd import CrdSchemas
from forge.validate.kube import KubeSchemas
from forge.validate.policies import check_policies, check_values_images
from forge.validate.values import check_values

OURS = ("scheduling", "training-operator", "kuberay-operator", "alluxio", "flyte")


def wave(cluster: str, component: str) -> int:
    app = generated(f"clusters/{cluster}/argocd/apps/application-{component}.yaml")
    return int(app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_operators_sync_before_flyte(cluster):
    flyte = wave(cluster, "flyte")
    assert wave(cluster, "training-operator") < flyte
    assert wave(cluster, "kuberay-operator") < flyte
    assert wave(cluster, "alluxio") < flyte  # Flyte's storage goes through it
    assert wave(cluster, "scheduling") < min(wave(cluster, c) for c in OURS if c != "scheduling")


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_training_operator_is_upstream_kustomize_at_a_pinned_tag(cluster):
    app = generated(f"clusters/{cluster}/argocd/apps/application-training-operator.yaml")
    upstream, overlay = app["spec"]["sources"]
    assert (upstream["repoURL"], upstream["targetRevision"], upstream["path"]) == (
        "https://github.com/kubeflow/trainer.git", "v1.9.4", "manifests/overlays/standalone")
    assert "chart" not in upstream and overlay["path"] == f"overlays/{cluster}/training-operator"
    assert upstream["kustomize"]["commonLabels"] == labels_for(cluster)
    patches = [yaml.safe_load(p["patch"]) for p in upstream["kustomize"]["patches"]]
    assert {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}, "$patch": "delete"} in patches
    assert app["spec"]["destination"]["namespace"] == "kubeflow"
    assert "RespectIgnoreDifferences=true" in app["spec"]["syncPolicy"]["syncOptions"]
    assert {d["kind"] for d in app["spec"]["ignoreDifferences"]} == {"Secret", "ValidatingWebhookConfiguration"}
    project = generated(f"clusters/{cluster}/argocd/appproject-training-operator.yaml")
    assert "https://github.com/kubeflow/trainer.git" in project["spec"]["sourceRepos"]
    # base/training-operator/ ships the one kubeflow Namespace, with its Pod Security level
    ns = [o for o in rendered(cluster, "training-operator") if o["kind"] == "Namespace"]
    assert [n["metadata"]["name"] for n in ns] == ["kubeflow"]
    assert ns[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_chart_repos_are_pinned(cluster):
    pins = chart_pins(REPO)
    for component, chart, repo, version in (
        ("alluxio", "alluxio", "https://alluxio-charts.storage.googleapis.com/openSource/2.9.6", "0.6.54"),
        ("kuberay-operator", "kuberay-operator", "https://ray-project.github.io/kuberay-helm/", "1.7.0"),
        ("flyte", "flyte-binary", "https://flyteorg.github.io/flyte", "v1.16.8"),
    ):
        source = generated(f"clusters/{cluster}/argocd/apps/application-{component}.yaml")["spec"]["sources"][0]
        assert (source["repoURL"], source["chart"], source["targetRevision"]) == (repo, chart, version)
        assert pins[chart].version == version


# ---- custom resources of Flyte's plugins against the operators' CRDs ------------------------------

def _pod_spec(cluster: str, priority_class: str) -> dict:
    """A task pod as Flyte's plugins build it: the default tolerations and the project's class."""
    k8s = generated(f"overlays/{cluster}/flyte/values.yaml")["configuration"]["inline"]["plugins"]["k8s"]
    return {"priorityClassName": priority_class, "tolerations": k8s["default-tolerations"],
            "containers": [{"name": "pytorch", "image": "ghcr.io/exa-labs/train:1.0",
                            "resources": {"limits": {"nvidia.com/gpu": 8}}}]}


def _plugin_resources(cluster: str) -> list[dict]:
    pod = {"spec": _pod_spec(cluster, "urgent-finetune")}
    replica = {"replicas": 2, "restartPolicy": "OnFailure", "template": pod}
    return json.loads(json.dumps([
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "ft", "namespace": "finetune-production"},
         "spec": {"runPolicy": {"cleanPodPolicy": "None"},
                  "pytorchReplicaSpecs": {"Master": {**replica, "replicas": 1}, "Worker": replica}}},
        {"apiVersion": "kubeflow.org/v1", "kind": "MPIJob", "metadata": {"name": "mpi", "namespace": "training-production"},
         "spec": {"slotsPerWorker": 8, "mpiReplicaSpecs": {"Launcher": {**replica, "replicas": 1}, "Worker": replica}}},
        {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "ray", "namespace": "embeddings-production"},
         "spec": {"entrypoint": "python embed.py", "shutdownAfterJobFinishes": True,
                  "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": pod},
                                     "workerGroupSpecs": [{"groupName": "gpu", "replicas": 4, "minReplicas": 4, "maxReplicas": 4, "rayStartParams": {},
                                                           "template": pod}]}}},
    ]))  # through JSON: no two replicas share one dict


@needs_upstream
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_plugin_resources_validate_against_upstream_crds(cluster):
    crds = CrdSchemas()
    assert crds.add_dir(upstream_data("training-operator-v1.9.4/crds")) == 6
    assert crds.add_dir(upstream_data("kuberay-operator-1.7.0/crds")) == 4
    for obj in _plugin_resources(cluster):
        assert crds.validate(obj) == [], obj["kind"]
    # The check can fail: a misplaced field is caught.
    bad = copy.deepcopy(_plugin_resources(cluster)[0])
    bad["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClass"] = "x"
    assert crds.validate(bad) == [("spec.pytorchReplicaSpecs.Worker.template.spec.priorityClass", "unknown field")]


@needs_upstream
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_argocd_objects_validate_against_argo_crds(cluster):
    crds = CrdSchemas()
    crds.add_dir(upstream_data("argo-cd-crds-v3.4.4/crds"))
    for name in ["appproject-bootstrap.yaml", *(f"appproject-{c}.yaml" for c in OURS), *(f"apps/application-{c}.yaml" for c in OURS)]:
        obj = generated(f"clusters/{cluster}/argocd/{name}")
        assert crds.validate(obj) == [], name


@needs_upstream
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_values_match_the_pinned_charts(cluster):
    pins = chart_pins(REPO)
    for component in COMPONENTS:
        if component.name not in OURS or not component.chart:
            continue
        values = generated(f"overlays/{cluster}/{component.name}/values.yaml")
        data = upstream_data(pins[component.chart].data_dir_name)
        assert check_values(values, data, component.declared_values) == [], component.name
        assert check_values_images(values) == [], component.name


@needs_upstream
def test_the_values_check_catches_a_misspelt_alluxio_key():
    values = generated("overlays/h200/alluxio/values.yaml")
    values["tieredStore"] = values.pop("tieredstore")
    problems = check_values(values, upstream_data("alluxio-0.6.54"), Alluxio.declared_values)
    assert [p for p, _ in problems] == ["tieredStore"]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_rendered_manifests_are_valid_kubernetes_and_follow_house_rules(cluster):
    kube = KubeSchemas("1.34")
    for component in OURS:
        for obj in rendered(cluster, component):
            name = f"{component}: {obj['kind']}/{obj['metadata']['name']}"
            problems = kube.validate(obj)
            if problems is None:  # not a built-in kind: ExternalSecrets (checked against ESO's CRD in tests/components/test_secrets_and_access.py) and Flyte's LocalQueues (against Kueue's CRD in tests/components/test_kueue.py)
                # ... and Alluxio's NVMe NodeFeatureRule (against NFD's CRD by forge validate --upstream).
                assert (obj["apiVersion"], obj["kind"]) in {("external-secrets.io/v1", obj["kind"]), ("kueue.x-k8s.io/v1beta2", "LocalQueue"),
                                                            ("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule")}, name
                continue
            assert problems == [], name
            assert check_policies(obj, required_labels=labels_for(cluster)) == [], name


@needs_upstream
def test_training_operator_crds_carry_prune_false_after_the_applications_patches(tmp_path, kustomize, upstream):
    """The Application's kustomize patches, applied by the real kustomize to the upstream CRDs of the
    tag: every CRD is annotated Prune=false (the Application itself keeps pruning the rest)."""
    app = generated("clusters/h200/argocd/apps/application-training-operator.yaml")
    assert app["spec"]["syncPolicy"]["automated"]["prune"] is True
    crds = sorted((upstream_data("training-operator-v1.9.4") / "crds").glob("*.yaml"))
    for path in crds:
        (tmp_path / path.name).write_text(path.read_text())
    patches = app["spec"]["sources"][0]["kustomize"]["patches"]
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({"resources": [p.name for p in crds], "patches": patches}))
    proc = subprocess.run([*kustomize, str(tmp_path)], capture_output=True, text=True, check=True)
    built = [d for d in yaml.safe_load_all(proc.stdout) if d]
    assert len(built) == len(crds) == 6
    for crd in built:
        assert crd["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == "Prune=false", crd["metadata"]["name"]
        assert crd["spec"]["names"]["kind"]  # the patch merged into the CRD, not replaced it
