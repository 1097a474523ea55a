from __future__ import annotations

import pytest

from forge.validate.policies import check_policies, check_values_images, image_problem

LABELS = {"app.kubernetes.io/managed-by": "forge"}
OURS = {"app.kubernetes.io/managed-by": "forge"}


def obj(kind: str, api_version: str = "v1", **fields) -> dict:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "labels": dict(OURS)}, **fields}


def test_clean_deployment(deployment):
    assert check_policies(deployment, required_labels=LABELS) == []


def test_secret_with_data_rejected():
    assert [p for p, _ in check_policies(obj("Secret", data={"k": "dg=="}), required_labels=LABELS)] == ["data"]
    assert [p for p, _ in check_policies(obj("Secret", stringData={"k": "v"}), required_labels=LABELS)] == ["stringData"]
    assert check_policies(obj("Secret", type="kubernetes.io/dockerconfigjson"), required_labels=LABELS) == []


@pytest.mark.parametrize("image", ["nginx:latest", "nginx", "registry.local:5000/nginx", "nginx:"])
def test_unpinned_images_rejected(deployment, image):
    deployment["spec"]["template"]["spec"]["initContainers"][0]["image"] = image
    [(path, reason)] = check_policies(deployment, required_labels=LABELS)
    assert path == "spec.template.spec.initContainers[0].image"
    assert image in reason


@pytest.mark.parametrize("image", [
    "registry.local:5000/nginx:1.27",
    "nginx@sha256:" + "a" * 64,
    "nginx:latest@sha256:" + "b" * 64,
])
def test_pinned_images_accepted(image):
    assert image_problem(image) is None


def test_cronjob_and_pod_images():
    cron = obj("CronJob", "batch/v1", spec={"jobTemplate": {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "busybox:latest"}]}}}}})
    assert [p for p, _ in check_policies(cron, required_labels=LABELS)] == [
        "spec.jobTemplate.spec.template.spec.containers[0].image"]
    pod = obj("Pod", spec={"containers": [{"name": "c", "image": "busybox"}]})
    assert [p for p, _ in check_policies(pod, required_labels=LABELS)] == ["spec.containers[0].image"]


def test_custom_resource_images():
    cp = obj("ClusterPolicy", "nvidia.com/v1", spec={
        "driver": {"repository": "nvcr.io/nvidia", "image": "driver", "version": "570.86.15"},  # pinned by sibling
        "toolkit": {"repository": "nvcr.io/nvidia/k8s", "image": "container-toolkit", "version": "latest"},
        "dcgm": {"repository": "nvcr.io/nvidia/cloud-native", "image": "dcgm"},
        "validator": {"image": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v26.7.0"},
    })
    problems = dict(check_policies(cp, required_labels=LABELS))
    assert set(problems) == {"spec.toolkit.image", "spec.dcgm.image"}


def test_configmap_data_named_image_is_not_an_image():
    assert check_policies(obj("ConfigMap", data={"image": "whatever"}), required_labels=LABELS) == []


def test_missing_or_wrong_label_reported():
    o = obj("ConfigMap")
    o["metadata"]["labels"] = {}
    assert check_policies(o, required_labels=LABELS) == [
        ("metadata.labels.app.kubernetes.io/managed-by", "required label missing (want 'forge')")]
    o["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "Helm"}
    assert check_policies(o, required_labels=LABELS) == [
        ("metadata.labels.app.kubernetes.io/managed-by", "label is 'Helm', want 'forge'")]


def test_namespace_needs_psa_label():
    ns = obj("Namespace")
    [(path, reason)] = check_policies(ns, required_labels=LABELS)
    assert path == "metadata.labels.pod-security.kubernetes.io/enforce"
    ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "privileged"
    assert check_policies(ns, required_labels=LABELS) == []
    ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "strict"
    assert len(check_policies(ns, required_labels=LABELS)) == 1


def test_values_images():
    values = {
        "image": {"repository": "nvcr.io/nvidia/gpu-operator", "tag": "latest"},
        "driver": {"repository": "nvcr.io/nvidia", "image": "driver", "version": ""},
        "ok": {"repository": "a/b", "tag": "1.0"},
        "digest": {"repository": "a/b", "tag": "", "digest": "sha256:" + "c" * 64},
        "plain": {"image": "busybox:latest"},
        "untagged": {"image": "busybox"},  # the chart adds its tag: not judged here
        "list": [{"image": {"repository": "a/b", "tag": ""}}],
        "deployment": {"image": {"tag": "latest"}},  # flyte-binary style: only the tag set
        "unrelated": {"tag": "latest"},
    }
    paths = sorted(p for p, _ in check_values_images(values))
    assert paths == ["deployment.image.tag", "driver.version", "image.tag", "list[0].image.tag", "plain.image"]
