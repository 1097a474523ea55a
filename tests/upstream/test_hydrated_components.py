"""What the upstream charts must make of the data components' values (`expected_in_hydrated`),
and the pieces of `forge hydrate` / `forge validate --hydrated` this area needs: the remote
kustomize base (training-operator), `--component`, and the Expected path forms (`field=value`,
ConfigMap files read as YAML, `Contains`).

The real charts are not in CI: objects below that stand in for chart output say so, and are
shaped as the pinned chart renders them (alluxio 0.6.54, flyte-binary v1.16.8). Real helm and
kustomize run where a test renders. With FORGE_DATA_MIRROR set to a mirror of the real charts and
manifests (see the tests at the end), the real ones are hydrated and checked too.
"""
from __future__ import annotations

import copy
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from tests.helpers import REPO, copy_repo_inputs, forge, generated, model

from forge.components.alluxio import Alluxio, tier_layout, tier_options, tier_levels
from forge.components.base import Contains, Expected, RemoteBase
from forge.components.flyte import Flyte, escape_for_tpl, log_link, ray_log_link
from forge.components.kuberay_operator import KuberayOperator
from forge.components.training_operator import TrainingOperator
from forge.tools import helm_command, kustomize_build_command
from forge.upstream.check import check_expected
from forge.upstream.remote import RemoteKey, apply_argocd_options, build_remote, cached_tree, pull_remote


def failures(objects: list[dict], expected: list[Expected]) -> list[str]:
    return [f"{e.kind}/{e.name} {path}: {reason}" for e in expected for path, reason in check_expected(objects, e)]


# ---- Expected path forms ------------------------------------------------------------------------------

POD = {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [
    {"name": "main", "image": "a:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
    {"name": "side", "image": "b:2"}]}}}}
CONFIG = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {
    "opts": "-Dx.y=1 -Dx.z=2,3 -Xmx8g", "003-storage.yaml": "storage:\n  type: stow\n  container: bucket\n"}}


def test_a_container_by_name_a_configmap_file_as_yaml_and_contains():
    objs = [POD, CONFIG]
    ok = [Expected("Deployment", "d", ("spec", "template", "spec", "containers", "name=side", "image"), "b:2"),
          Expected("Deployment", "d", "spec.template.spec.containers.name=main.env", Contains({"name": "B", "value": "2"})),
          Expected("ConfigMap", "c", ("data", "003-storage.yaml", "storage", "container"), "bucket"),
          Expected("ConfigMap", "c", ("data", "opts"), Contains("-Dx.z=2,3", "-Xmx8g"))]
    assert failures(objs, ok) == []
    bad = [Expected("Deployment", "d", ("spec", "template", "spec", "containers", "name=gone", "image"), "b:2"),
           Expected("Deployment", "d", "spec.template.spec.containers.name=main.env", Contains({"name": "C", "value": "3"})),
           Expected("ConfigMap", "c", ("data", "003-storage.yaml", "storage", "type"), "local"),
           # a word, not a substring: -Dx.z=2 is not -Dx.z=2,3
           Expected("ConfigMap", "c", ("data", "opts"), Contains("-Dx.z=2", "-Dx.y=1")),
           Expected("ConfigMap", "c", ("data", "003-storage.yaml", "storage"), Contains("x"))]
    assert failures(objs, bad) == [
        'Deployment/d spec.template.spec.containers.name=gone.image: missing: the inventory asks for "b:2"',
        'Deployment/d spec.template.spec.containers.name=main.env: lacks [{"name": "C", "value": "3"}]: the inventory asks for them',
        'ConfigMap/c data.003-storage.yaml.storage.type: is "stow", the inventory asks for "local"',
        'ConfigMap/c data.opts: lacks ["-Dx.z=2"]: the inventory asks for them',
        'ConfigMap/c data.003-storage.yaml.storage: is {"type": "stow", "container": "bucket"}, not a list or string "containing x"',
    ]


def test_an_ini_file_in_a_configmap_is_read_by_section():
    # Grafana's chart writes grafana.ini as INI (templates/_config.tpl): not YAML, so it was unreadable.
    ini = {"kind": "ConfigMap", "metadata": {"name": "g"}, "data": {"grafana.ini": (
        "instance_name = x\n[auth]\ndisable_login_form = true\n; a comment = no\n[auth.generic_oauth]\n"
        "use_pkce = true\nrole_attribute_path = a == 'b' && 'Admin'\n")}}
    ok = [Expected("ConfigMap", "g", ("data", "grafana.ini", "auth", "disable_login_form"), "true"),
          Expected("ConfigMap", "g", ("data", "grafana.ini", "auth.generic_oauth", "use_pkce"), "true"),
          Expected("ConfigMap", "g", ("data", "grafana.ini", "auth.generic_oauth", "role_attribute_path"), "a == 'b' && 'Admin'"),
          Expected("ConfigMap", "g", ("data", "grafana.ini", "", "instance_name"), "x")]
    assert failures([ini], ok) == []
    bad = [Expected("ConfigMap", "g", ("data", "grafana.ini", "auth", "disable_login_form"), True),  # INI values are text
           Expected("ConfigMap", "g", ("data", "grafana.ini", "auth.anonymous", "enabled"), "false"),
           Expected("ConfigMap", "g", ("data", "grafana.ini", "auth", "a comment"), "no")]
    assert failures([ini], bad) == [
        'ConfigMap/g data.grafana.ini.auth.disable_login_form: is "true", the inventory asks for true',
        'ConfigMap/g data.grafana.ini.auth.anonymous.enabled: missing: the inventory asks for "false"',
        'ConfigMap/g data.grafana.ini.auth.a comment: missing: the inventory asks for "no"']


def test_a_list_item_by_a_nested_field():
    sts = {"kind": "StatefulSet", "metadata": {"name": "m"}, "spec": {"volumeClaimTemplates": [
        {"metadata": {"name": "other"}, "spec": {"storageClassName": "x"}},
        {"metadata": {"name": "journal"}, "spec": {"storageClassName": "fast"}}]}}
    e = Expected("StatefulSet", "m", ("spec", "volumeClaimTemplates", "metadata.name=journal", "spec", "storageClassName"), "fast")
    assert failures([sts], [e]) == []
    assert failures([sts], [e._replace(value="slow")]) == [
        'StatefulSet/m spec.volumeClaimTemplates.metadata.name=journal.spec.storageClassName: is "fast", the inventory asks for "slow"']


# ---- Alluxio ----------------------------------------------------------------------------------------------

def test_alluxio_job_master_and_job_workers_get_the_s3_credentials_file():
    # ASYNC_THROUGH uploads run as persist jobs on the job workers: they read S3 too. The chart
    # mounts secrets.master/worker into the job containers but gives them only jobMaster.env /
    # jobWorker.env (read by master/statefulset.yaml and worker/daemonset.yaml of 0.6.54).
    for cluster in ("h200", "a100"):
        v = generated(f"overlays/{cluster}/alluxio/values.yaml")
        env = {"AWS_CREDENTIAL_PROFILES_FILE": "/secrets/s3/credentials"}
        assert v["master"]["env"] == v["worker"]["env"] == v["jobMaster"]["env"] == v["jobWorker"]["env"] == env
        assert {"jobMaster.env", "jobWorker.env"} <= Alluxio.declared_values


def test_alluxio_tier_options_are_what_the_chart_writes_for_the_a100_layout():
    m = model("a100")
    layout = tier_layout(m, Alluxio().settings(m))
    assert tier_options(layout) == [
        "-Dalluxio.worker.tieredstore.levels=2",
        "-Dalluxio.worker.tieredstore.level0.alias=MEM", "-Dalluxio.worker.tieredstore.level0.dirs.mediumtype=MEM",
        "-Dalluxio.worker.tieredstore.level0.dirs.path=/dev/shm", "-Dalluxio.worker.tieredstore.level0.dirs.quota=54760833024",
        "-Dalluxio.worker.tieredstore.level0.watermark.high.ratio=0.95", "-Dalluxio.worker.tieredstore.level0.watermark.low.ratio=0.7",
        "-Dalluxio.worker.tieredstore.level1.alias=SSD", "-Dalluxio.worker.tieredstore.level1.dirs.mediumtype=SSD,SSD",
        "-Dalluxio.worker.tieredstore.level1.dirs.path=/mnt/nvme0,/mnt/nvme1", "-Dalluxio.worker.tieredstore.level1.dirs.quota=3218GB,3218GB",
        "-Dalluxio.worker.tieredstore.level1.watermark.high.ratio=0.95", "-Dalluxio.worker.tieredstore.level1.watermark.low.ratio=0.7",
    ]
    assert len(tier_levels(layout)) == 2


def _alluxio_as_rendered(cluster: str) -> list[dict]:
    """Stand-in for the objects alluxio 0.6.54 renders from our values (not the chart itself):
    what the real chart rendered for a100 in `forge hydrate`, rebuilt from the values file."""
    m = model(cluster)
    v = generated(f"overlays/{cluster}/alluxio/values.yaml")
    layout = tier_layout(m, Alluxio().settings(m))
    props = {"alluxio.security.stale.channel.purge.interval": "365d", **v["properties"]}  # chart default + ours
    opts = ["-Dalluxio.master.journal.type=EMBEDDED", "-Dalluxio.master.journal.folder=/journal",
            *(f"-D{k}={props[k]}" for k in sorted(props)), "-XX:+UseContainerSupport"]
    secret = m.settings.s3.credentials_secret
    secret_volume = {"name": f"secret-{secret}-volume", "secret": {"secretName": secret, "defaultMode": 256}}
    mount = {"name": f"secret-{secret}-volume", "mountPath": "/secrets/s3", "readOnly": True}

    def container(name: str, env: dict) -> dict:
        return {"name": name, "image": "alluxio/alluxio:2.9.6", "volumeMounts": [mount],
                "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        *({"name": k, "value": val} for k, val in (env or {}).items())]}

    def pod(spec: dict) -> dict:
        return {"template": {"spec": spec}}

    return [
        {"kind": "ConfigMap", "metadata": {"name": "alluxio-config"}, "data": {
            "ALLUXIO_JAVA_OPTS": " ".join(opts) + " ",
            "ALLUXIO_MASTER_JAVA_OPTS": " ".join(v["master"]["jvmOptions"]) + " ",
            "ALLUXIO_WORKER_JAVA_OPTS": "-Dalluxio.worker.hostname=${H} " + " ".join(tier_options(layout) + v["worker"]["jvmOptions"]) + " "}},
        {"kind": "StatefulSet", "metadata": {"name": "alluxio-master"}, "spec": {
            "replicas": v["master"]["count"], **pod({
                "hostNetwork": v["master"].get("hostNetwork", True),  # the chart's default: on the host network
                "nodeSelector": v["master"]["nodeSelector"], "tolerations": v["master"]["tolerations"],
                "containers": [{**container("alluxio-master", v["master"]["env"]), "resources": v["master"]["resources"]},
                               container("alluxio-job-master", v.get("jobMaster", {}).get("env"))],
                "volumes": [{"name": "alluxio-metrics-volume", "configMap": {"name": "alluxio-metrics"}}, secret_volume]}),
            "volumeClaimTemplates": [{"metadata": {"name": "alluxio-journal"}, "spec": {
                "storageClassName": v["journal"]["storageClass"], "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": v["journal"]["size"]}}}}]}},
        {"kind": "DaemonSet", "metadata": {"name": "alluxio-worker"}, "spec": pod({
            "nodeSelector": v["worker"]["nodeSelector"], "tolerations": v["worker"]["tolerations"],
            "containers": [container("alluxio-worker", v["worker"]["env"]), container("alluxio-job-worker", v.get("jobWorker", {}).get("env"))],
            "volumes": [secret_volume, {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": layout.memory_bytes}},
                        *({"hostPath": {"path": d.path, "type": "DirectoryOrCreate"}, "name": f"ssd-{i}"} for i, d in enumerate(layout.ssd))]})},
        {"kind": "DaemonSet", "metadata": {"name": "alluxio-proxy"}, "spec": pod({
            "nodeSelector": v["proxy"]["nodeSelector"], "tolerations": v["proxy"]["tolerations"],
            "containers": [{"name": "alluxio-proxy", "image": "alluxio/alluxio:2.9.6", "ports": [{"containerPort": 39999, "name": "web"}]}]})},
    ]


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_alluxio_expectations_hold_on_the_chart_output_and_catch_what_it_drops(cluster):
    m = model(cluster)
    expected = Alluxio().expected_in_hydrated(m)
    objs = _alluxio_as_rendered(cluster)
    assert failures(objs, expected) == []
    # What the chart did before jobWorker.env was set: the job worker had no credentials file.
    dropped = copy.deepcopy(objs)
    dropped[2]["spec"]["template"]["spec"]["containers"][1]["env"] = dropped[2]["spec"]["template"]["spec"]["containers"][1]["env"][:1]
    assert failures(dropped, expected) == [
        "DaemonSet/alluxio-worker spec.template.spec.containers.name=alluxio-job-worker.env: lacks "
        '[{"name": "AWS_CREDENTIAL_PROFILES_FILE", "value": "/secrets/s3/credentials"}]: the inventory asks for them']
    # A tier the chart lost, and one master too few.
    dropped = copy.deepcopy(objs)
    dropped[0]["data"]["ALLUXIO_WORKER_JAVA_OPTS"] = dropped[0]["data"]["ALLUXIO_WORKER_JAVA_OPTS"].replace("levels=2", "levels=1")
    dropped[1]["spec"]["replicas"] = 1
    assert [f.split(":")[0] for f in failures(dropped, expected)] == [
        "ConfigMap/alluxio-config data.ALLUXIO_WORKER_JAVA_OPTS", "StatefulSet/alluxio-master spec.replicas"]


def test_alluxio_expects_the_inventory_facts():
    m = model("h200")
    by_path = {(e.kind, e.name, e.path if isinstance(e.path, str) else ".".join(e.path)): e.value
               for e in Alluxio().expected_in_hydrated(m)}
    assert by_path[("StatefulSet", "alluxio-master", "spec.replicas")] == 3
    java = by_path[("ConfigMap", "alluxio-config", "data.ALLUXIO_JAVA_OPTS")].items
    for word in ("-Dalluxio.master.journal.type=EMBEDDED", "-Dalluxio.user.file.writetype.default=CACHE_THROUGH",
                 "-Dalluxio.proxy.s3.writetype=CACHE_THROUGH", "-Dalluxio.user.file.readtype.default=CACHE",
                 f"-Dalluxio.underfs.s3.endpoint={m.settings.s3.endpoint}"):
        assert word in java
    worker = by_path[("ConfigMap", "alluxio-config", "data.ALLUXIO_WORKER_JAVA_OPTS")].items
    assert "-Dalluxio.worker.tieredstore.level1.dirs.path=/mnt/nvme0,/mnt/nvme1,/mnt/nvme2,/mnt/nvme3" in worker
    assert "-Dalluxio.worker.tieredstore.level1.dirs.quota=2682GB,2682GB,2682GB,2682GB" in worker
    journal = by_path[("StatefulSet", "alluxio-master", "spec.volumeClaimTemplates.metadata.name=alluxio-journal.spec")]
    assert journal["storageClassName"] == Alluxio().settings(m).journal.storage_class


# ---- Flyte ------------------------------------------------------------------------------------------------

def test_ray_log_link_selects_the_rayclusters_pods():
    s = Flyte().settings(model("h200"))
    link = ray_log_link(s)
    uri = link["templateUris"][0]
    assert uri.startswith("https://grafana.h200.exa.internal/explore?")
    for placeholder in ("{{ .namespace }}", "{{ .rayClusterName }}", "{{ .podUnixStartTime }}"):
        assert placeholder in uri
    assert "{{ .podName }}" not in uri  # the Ray plugin has none to give
    assert "pod%3D~%5C%22{{ .rayClusterName }}-.%2B%5C%22" in uri  # pod=~"<cluster>-.+"
    assert link["displayName"] == log_link(s)["displayName"]


def test_inline_configuration_survives_the_charts_tpl(tmp_path: Path):
    """flyte-binary renders configuration.inline with `tpl (.Values.configuration.inline | toYaml) .`
    (templates/configmap.yaml of v1.16.8): unescaped, Helm eats Flyte's {{ .placeholders }}.
    The chart here is a stand-in holding that one line, rendered by the real helm."""
    chart = tmp_path / "tplchart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tplchart\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("inline: {}\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  100-inline-config.yaml: |\n"
        "    {{- tpl ( .Values.inline | toYaml ) . | nindent 4 }}\n")
    values = generated("overlays/h200/flyte/values.yaml")["configuration"]["inline"]
    (tmp_path / "values.yaml").write_text(yaml.safe_dump({"inline": values}))
    out = subprocess.run([*helm_command(REPO), "template", "x", str(chart), "-f", str(tmp_path / "values.yaml")],
                         capture_output=True, text=True, check=True).stdout
    inline = yaml.safe_load(yaml.safe_load(out)["data"]["100-inline-config.yaml"])
    s = Flyte().settings(model("h200"))
    assert inline["plugins"]["ray"]["logs"]["templates"] == [ray_log_link(s)]
    # Unescaped, the placeholders come out empty: what the values did before.
    (tmp_path / "values.yaml").write_text(yaml.safe_dump({"inline": {"t": ray_log_link(s)["templateUris"][0]}}))
    out = subprocess.run([*helm_command(REPO), "template", "x", str(chart), "-f", str(tmp_path / "values.yaml")],
                         capture_output=True, text=True, check=True).stdout
    assert "rayClusterName" not in out and "pod%3D~%5C%22-.%2B" in out


def test_escape_for_tpl_wraps_each_placeholder():
    assert escape_for_tpl({"a": ["x{{ .namespace }}y{{ .podName }}"], "n": 1}) == {
        "a": ["x{{`{{ .namespace }}`}}y{{`{{ .podName }}`}}"], "n": 1}


def test_flyte_expects_storage_plugins_logs_image_and_secrets():
    m = model("a100")
    s = Flyte().settings(m)
    by_path = {(e.kind, e.name, ".".join(e.path) if isinstance(e.path, tuple) else e.path): e.value
               for e in Flyte().expected_in_hydrated(m)}
    cm = ("ConfigMap", "flyte-config")
    assert by_path[(*cm, "data.003-storage.yaml.storage.stow")]["config"]["endpoint"] == \
        "http://alluxio-s3.alluxio.svc.cluster.local:39999/api/v1/s3"
    assert by_path[(*cm, "data.003-storage.yaml.storage.container")] == m.settings.s3.buckets["flyte"]
    assert by_path[(*cm, "data.001-plugins.yaml.tasks.task-plugins.enabled-plugins")] == \
        ["container", "sidecar", "k8s-array", "pytorch", "ray"]
    assert by_path[(*cm, "data.001-plugins.yaml.tasks.task-plugins.default-for-task-types")] == {
        "container": "container", "sidecar": "sidecar", "container_array": "k8s-array",
        "pytorch": "pytorch", "ray": "ray"}
    assert by_path[(*cm, "data.001-plugins.yaml.plugins.logs.templates")] == [log_link(s)]
    assert by_path[(*cm, "data.100-inline-config.yaml.plugins.ray.logs.templates")] == [ray_log_link(s)]
    assert by_path[(*cm, "data.100-inline-config.yaml.plugins.k8s.default-tolerations")] == m.gpu_tolerations
    image = by_path[("Deployment", "flyte", "spec.template.spec.containers.name=flyte.image")]
    assert image == "cr.flyte.org/flyteorg/flyte-binary-release:v1.16.8" and not image.endswith(":latest")
    volumes = by_path[("Deployment", "flyte", "spec.template.spec.volumes")].items
    assert volumes == ({"name": "db-password", "secret": {"secretName": s.database.password_secret}},)


# ---- operators ----------------------------------------------------------------------------------------------

def test_operators_expect_their_placement():
    m = model("h200")
    for component in (KuberayOperator(), TrainingOperator()):
        by_path = {".".join(e.path): e.value for e in component.expected_in_hydrated(m) if e.kind == "Deployment"}
        assert by_path["spec.template.spec.nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
        assert by_path["spec.template.spec.priorityClassName"] == "system-cluster-critical"
        assert by_path["spec.template.spec.tolerations"] == m.system_tolerations


# ---- remote kustomize base (training-operator) --------------------------------------------------------------

def _fake_trainer(root: Path, deployment: str = "training-operator") -> Path:
    """A stand-in for kubeflow/trainer's manifests at v1.9.4 (not the real ones): the standalone
    overlay over a base, with the Namespace, Deployment and image pin the real overlay has."""
    base, overlay = root / "manifests" / "base", root / "manifests" / "overlays" / "standalone"
    base.mkdir(parents=True)
    overlay.mkdir(parents=True)
    (base / "kustomization.yaml").write_text("resources:\n  - deployment.yaml\n")
    (base / "deployment.yaml").write_text(yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": deployment, "labels": {"control-plane": "kubeflow-training-operator"}},
        "spec": {"selector": {"matchLabels": {"control-plane": "kubeflow-training-operator"}},
                 "template": {"metadata": {"labels": {"control-plane": "kubeflow-training-operator"}},
                              "spec": {"containers": [{"name": "training-operator", "image": "ghcr.io/kubeflow/training-v1/training-operator",
                                                       "resources": {"limits": {"memory": "1Gi"}}}]}}}}))
    (overlay / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: kubeflow\n"
        "resources:\n  - ../../base\n  - namespace.yaml\n"
        "images:\n  - name: ghcr.io/kubeflow/training-v1/training-operator\n    newTag: v1-93c5489\n")
    (overlay / "namespace.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kubeflow\n")
    return root


def test_argocd_kustomize_options_go_into_the_bases_own_kustomization():
    options = {"commonLabels": {"a": "b"}, "labelWithoutSelector": True, "patches": [{"patch": "p"}]}
    assert apply_argocd_options({"resources": ["x"], "patches": [{"patch": "theirs"}]}, options, "here") == {
        "resources": ["x"], "patches": [{"patch": "theirs"}, {"patch": "p"}], "labels": [{"pairs": {"a": "b"}}]}
    assert apply_argocd_options({}, {"commonLabels": {"a": "b"}}, "here") == {"commonLabels": {"a": "b"}}
    from forge.errors import ForgeError
    with pytest.raises(ForgeError) as err:
        apply_argocd_options({}, {"namePrefix": "x-"}, "a100/training-operator")
    assert str(err.value) == "a100/training-operator: Argo CD kustomize option(s) namePrefix are not reproduced by forge hydrate"


def test_the_remote_base_builds_with_the_applications_patches(tmp_path: Path):
    mirror = tmp_path / "mirror"
    _fake_trainer(mirror / "training-operator-v1.9.4")
    cache = tmp_path / "cache"
    m = model("a100")
    base = TrainingOperator().remote_base(m)
    key = RemoteKey.of("training-operator", base)
    assert cached_tree(cache, key) is None
    line = pull_remote(cache, key, mirror)
    assert line == (f"training-operator: https://github.com/kubeflow/trainer.git v1.9.4 (manifests/overlays/standalone) from "
                    f"{mirror / 'training-operator-v1.9.4'} (UNVERIFIED: a git tag has no digest to check)")
    tree = cached_tree(cache, key)
    assert tree == cache / "kustomize" / "trainer-v1.9.4" / "tree"
    app = generated("clusters/a100/argocd/apps/application-training-operator.yaml")
    source = app["spec"]["sources"][0]
    out = [o for o in yaml.safe_load_all(build_remote(tree, source, kustomize_build_command(REPO), "a100/training-operator")) if o]
    assert [o["kind"] for o in out] == ["Deployment"]  # the upstream Namespace is deleted by our patch
    dep = out[0]
    spec = dep["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == m.system_node_selector and spec["priorityClassName"] == "system-cluster-critical"
    assert dep["metadata"]["labels"]["forge.exa.ai/cluster"] == "a100"
    assert dep["spec"]["selector"] == {"matchLabels": {"control-plane": "kubeflow-training-operator"}}  # immutable: untouched
    assert (tree / "manifests/overlays/standalone/kustomization.yaml").read_text().count("patches") == 0  # cache not edited


def test_a_mirror_without_the_base_says_what_it_looked_for(tmp_path: Path):
    from forge.errors import ForgeError
    key = RemoteKey.of("training-operator", RemoteBase("https://github.com/kubeflow/trainer.git", "v1.9.4", "manifests/overlays/standalone"))
    with pytest.raises(ForgeError) as err:
        pull_remote(tmp_path / "cache", key, tmp_path)
    assert str(err.value) == (f"{tmp_path}: no https://github.com/kubeflow/trainer.git at v1.9.4 (looked for "
                              "trainer-v1.9.4/manifests/overlays/standalone/kustomization.yaml and "
                              "training-operator-v1.9.4/manifests/overlays/standalone/kustomization.yaml)")
    assert not (tmp_path / "cache" / "kustomize" / "trainer-v1.9.4").exists()


@pytest.fixture
def data_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("FORGE_CHART_CACHE", raising=False)
    repo = copy_repo_inputs(tmp_path / "repo")
    result = forge(repo, "generate")
    assert result.exit_code == 0, result.output
    return repo


def test_hydrate_one_component_from_its_remote_base_then_validate_it(data_repo: Path, tmp_path: Path):
    mirror = tmp_path / "mirror"
    _fake_trainer(mirror / "trainer-v1.9.4")
    result = forge(data_repo, "hydrate", "--component", "training-operator")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: kustomize base https://github.com/kubeflow/trainer.git v1.9.4 (manifests/overlays/standalone) is not in the "
        f"chart cache {data_repo / '.cache/charts'}: run `forge charts pull training-operator` (without network: "
        "`forge charts pull --from <mirror> training-operator`, the mirror holding trainer-v1.9.4/manifests/overlays/standalone/)",
        "error: nothing was hydrated"]
    assert forge(data_repo, "charts", "pull", "--from", str(mirror), "training-operator").exit_code == 0
    other = data_repo / "build/hydrated/a100/alluxio.yaml"  # left by an earlier run: a filtered run keeps it
    other.parent.mkdir(parents=True)
    other.write_text("# earlier\n")
    result = forge(data_repo, "hydrate", "--component", "training-operator")
    assert result.exit_code == 0, result.output
    # two objects from the mirrored base and overlay, and the namespace's four NetworkPolicies (deny, same namespace, scrape, webhook)
    assert result.stdout.splitlines()[:2] == ["a100: 6 objects (training-operator 6)", "h200: 6 objects (training-operator 6)"]
    assert other.read_text() == "# earlier\n"
    text = (data_repo / "build/hydrated/a100/training-operator.yaml").read_text()
    assert text.splitlines()[1] == ("# + kustomize build manifests/overlays/standalone of https://github.com/kubeflow/trainer.git "
                                    "at v1.9.4 with the Application's kustomize options")
    result = forge(data_repo, "validate", "--hydrated", "--component", "training-operator")
    assert result.exit_code == 0, result.output
    assert ": 0 failures, 0 warnings" in result.stdout


def test_validate_hydrated_catches_a_remote_patch_that_found_no_target(data_repo: Path, tmp_path: Path):
    mirror = tmp_path / "mirror"
    _fake_trainer(mirror / "trainer-v1.9.4", deployment="training-operator-v2")  # upstream renamed it
    assert forge(data_repo, "charts", "pull", "--from", str(mirror), "training-operator").exit_code == 0
    assert forge(data_repo, "hydrate", "--component", "training-operator").exit_code == 0
    result = forge(data_repo, "validate", "--hydrated", "--component", "training-operator")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert (
        "FAIL a100 / training-operator / Deployment/training-operator / spec.template.spec.containers.name=training-operator.image / "
        "the chart rendered no Deployment named 'training-operator' (the inventory asks for "
        "spec.template.spec.containers.name=training-operator.image = \"ghcr.io/kubeflow/training-v1/training-operator:v1-93c5489\")") in lines
    # and the renamed Deployment, which our class patch missed, is an infrastructure pod below the workloads
    assert lines[0].startswith("FAIL a100 / training-operator / Deployment/kubeflow/training-operator-v2 / "
                               "spec.template.spec.priorityClassName / no priorityClassName in infrastructure namespace 'kubeflow'")


def test_component_filter_refuses_an_unknown_name(data_repo: Path):
    result = forge(data_repo, "hydrate", "--component", "aluxio")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --component aluxio: no cluster enables it (enabled: alloy, alluxio, efa-device-plugin, external-secrets, flyte, ")
    result = forge(data_repo, "validate", "--component", "alluxio")
    assert result.exit_code == 2 and result.stderr == "error: --component goes with --hydrated\n"


# ---- the real charts, where a mirror of them is at hand --------------------------------------------------------

MIRROR = os.environ.get("FORGE_DATA_MIRROR")


@pytest.mark.skipif(not MIRROR, reason="FORGE_DATA_MIRROR is not set: no mirror of the real alluxio, flyte-binary, "
                                       "kuberay-operator charts and kubeflow/trainer manifests (CI has none)")
def test_the_real_charts_carry_the_inventory(data_repo: Path):
    """With a mirror of the pinned upstream charts and manifests (the report of this change says
    how to build one), every data component hydrates and validates clean."""
    keys = ("alluxio", "kuberay-operator", "flyte-binary", "training-operator")
    result = forge(data_repo, "charts", "pull", "--from", MIRROR, *keys)
    assert result.exit_code == 0, result.output
    components = [a for c in ("alluxio", "flyte", "kuberay-operator", "training-operator") for a in ("--component", c)]
    result = forge(data_repo, "hydrate", *components)
    assert result.exit_code == 0, result.output
    result = forge(data_repo, "validate", "--hydrated", *components)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].endswith(": 0 failures, 0 warnings")
    shutil.rmtree(data_repo / ".cache", ignore_errors=True)


@pytest.mark.skipif(not MIRROR, reason="FORGE_DATA_MIRROR is not set: no mirror of the real kube-prometheus-stack, loki and "
                                       "external-secrets charts (CI has none)")
def test_the_real_kube_prometheus_stack_serves_grafana_as_the_inventory_asks(data_repo: Path):
    """Issue 33: Grafana's Ingress, login and client secret, hydrated with kube-prometheus-stack
    88.5.3 and its grafana 12.11.1 subchart (docs/charts.md: building a mirror), with Loki for its
    gateway Service and external-secrets for the ExternalSecret CRDs. Skipped in CI (no mirror)."""
    from urllib.parse import urlsplit
    from forge.components.grafana_access import PORT, SECRET_ENV
    from forge.components.loki import GATEWAY_URL
    from forge.components.prometheus import GRAFANA_PODS
    result = forge(data_repo, "charts", "pull", "--from", MIRROR, "kube-prometheus-stack", "loki", "external-secrets")
    assert result.exit_code == 0, result.output
    components = [a for c in ("prometheus-crds", "prometheus", "loki", "external-secrets") for a in ("--component", c)]
    assert forge(data_repo, "hydrate", *components).exit_code == 0
    result = forge(data_repo, "validate", "--hydrated", *components)  # the Expected entries, the AppProject, the schemas
    assert result.exit_code == 0 and ": 0 failures, " in result.stdout.splitlines()[-1], result.output
    for cluster in ("h200", "a100"):
        def objects(component: str) -> dict[tuple[str, str], dict]:
            text = (data_repo / "build/hydrated" / cluster / f"{component}.yaml").read_text()
            return {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(text) if o}
        grafana, loki = objects("prometheus"), objects("loki")
        host = f"grafana.{cluster}.exa.internal"
        ingress = grafana[("Ingress", "prometheus-grafana")]
        assert ingress["spec"]["ingressClassName"] == "nginx"
        assert ingress["spec"]["tls"] == [{"hosts": [host], "secretName": "grafana-tls"}]
        assert ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/whitelist-source-range"]
        [rule] = ingress["spec"]["rules"]
        assert rule["host"] == host and rule["http"]["paths"][0]["backend"]["service"] == {
            "name": "prometheus-grafana", "port": {"number": 80}}
        service = grafana[("Service", "prometheus-grafana")]["spec"]
        assert service["ports"][0]["port"] == 80 and service["selector"] == GRAFANA_PODS
        pod = grafana[("Deployment", "prometheus-grafana")]["spec"]["template"]
        assert GRAFANA_PODS.items() <= pod["metadata"]["labels"].items()
        [container] = [c for c in pod["spec"]["containers"] if c["name"] == "grafana"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports[service["ports"][0]["targetPort"]] == PORT
        assert {"name": SECRET_ENV, "valueFrom": {"secretKeyRef": {"key": "client_secret", "name": "grafana-oidc"}}} in container["env"]
        ini = grafana[("ConfigMap", "prometheus-grafana")]["data"]["grafana.ini"]
        for line in ("[auth.generic_oauth]", "use_pkce = true", "[auth]", "disable_login_form = true", "[auth.anonymous]",
                     "enabled = false", f"root_url = https://{host}/"):
            assert line in ini.splitlines()
        sources = yaml.safe_load(grafana[("ConfigMap", "prometheus-kube-prometheus-grafana-datasource")]["data"]["datasource.yaml"])
        [source] = [d for d in sources["datasources"] if d["name"] == "Loki"]
        url = urlsplit(source["url"])
        assert source["url"] == GATEWAY_URL and url.hostname == "loki-gateway.loki.svc.cluster.local" and url.port is None
        gateway = loki[("Service", "loki-gateway")]
        assert gateway["metadata"]["namespace"] == "loki" and [p["port"] for p in gateway["spec"]["ports"]] == [80]
    shutil.rmtree(data_repo / ".cache", ignore_errors=True)


@pytest.mark.parametrize("plant", ["link-outside", "dangling-link", "fifo"])
def test_a_mirrored_base_with_a_link_out_or_a_fifo_is_refused_and_nothing_cached(tmp_path: Path, plant: str):
    """Issue 36: `forge charts pull --from MIRROR` copied the base's folder following every link, so a
    `deployment.yaml` linked to a kubeconfig went into the cache (and into what kustomize renders),
    and a FIFO hung the copy. A link that stays inside the folder (git checkouts hold them) is kept."""
    from forge.errors import ForgeError
    secret = tmp_path / "kubeconfig"
    secret.write_text("token: s3cr3t-token\n")
    root = _fake_trainer(tmp_path / "mirror" / "training-operator-v1.9.4")
    target = root / "manifests" / "base" / "deployment.yaml"
    target.unlink()
    if plant == "link-outside":
        target.symlink_to(secret)
    elif plant == "dangling-link":
        target.symlink_to(tmp_path / "gone.yaml")
    else:
        os.mkfifo(target)
    key = RemoteKey.of("training-operator", RemoteBase("https://github.com/kubeflow/trainer.git", "v1.9.4", "manifests/overlays/standalone"))
    with pytest.raises(ForgeError) as err:
        pull_remote(tmp_path / "cache", key, tmp_path / "mirror")
    message = str(err.value)
    assert message.startswith(f"{target}: is a ") and "s3cr3t" not in message
    assert "inside its own folder only; copy the file in (nothing was cached)" in message
    assert cached_tree(tmp_path / "cache", key) is None


def test_a_mirrored_base_keeps_a_link_inside_its_folder(tmp_path: Path):
    root = _fake_trainer(tmp_path / "mirror" / "training-operator-v1.9.4")
    (root / "manifests" / "base" / "same.yaml").symlink_to("deployment.yaml")
    key = RemoteKey.of("training-operator", RemoteBase("https://github.com/kubeflow/trainer.git", "v1.9.4", "manifests/overlays/standalone"))
    pull_remote(tmp_path / "cache", key, tmp_path / "mirror")
    tree = cached_tree(tmp_path / "cache", key)
    assert (tree / "manifests/base/same.yaml").read_text() == (root / "manifests/base/deployment.yaml").read_text()
