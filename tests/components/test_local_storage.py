"""Issue 22 item 10: a data path per component (Prometheus, Alertmanager, Loki, the Alluxio
journal): forge writes a local-path StorageClass of its own on that folder and the component's
claims name it, so the data can leave the root disk etcd uses. Without one, the output is what it
was (the component's storage_class or cluster.storage_class). Bad input: file:line, exit 2."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from forge.commands.main import main
from forge.components.alluxio import Alluxio
from forge.components.loki import Loki
from forge.components.prometheus import Prometheus
from tests.helpers import (CLUSTERS, REPO, copy_repo_inputs, edit, inventory_file, inventory_text, line_of, model,
                           only_problem, problems_of)

PROMETHEUS = "    retention_days: 30\n    scrape_interval_seconds: 30\n"
LOKI = "  loki:\n    retention_days: 30\n"
JOURNAL = "journal: {storage_class: local-path, size_gib: 50,"


def with_paths() -> str:
    text = edit(inventory_text("h200"), PROMETHEUS,
                PROMETHEUS + "    data_path: /data/prometheus\n    alertmanager_data_path: /data/alertmanager\n")
    text = edit(text, LOKI, LOKI + "    data_path: /data/loki\n")
    return edit(text, JOURNAL, "journal: {data_path: /data/alluxio-journal, size_gib: 50,")


def local_class(name: str, path: str) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": "rancher.io/local-path", "parameters": {"nodePath": path},
            "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete"}


def classes(objects: list[dict]) -> list[dict]:
    return [o for o in objects if o["kind"] == "StorageClass"]


def test_each_data_path_gets_its_own_class_and_the_claims_name_it():
    m = model("h200", with_paths())
    prom = Prometheus().values(m)
    assert prom["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "forge-local-prometheus"
    assert prom["alertmanager"]["alertmanagerSpec"]["storage"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "forge-local-alertmanager"
    assert classes(Prometheus().manifests(m)) == [local_class("forge-local-prometheus", "/data/prometheus"),
                                                  local_class("forge-local-alertmanager", "/data/alertmanager")]
    loki = Loki().values(m)
    persisted = [v["persistence"]["storageClass"] for v in loki.values() if isinstance(v, dict) and "persistence" in v]
    assert persisted and set(persisted) == {"forge-local-loki"}
    assert classes(Loki().manifests(m)) == [local_class("forge-local-loki", "/data/loki")]
    assert Alluxio().values(m)["journal"]["storageClass"] == "forge-local-alluxio-journal"
    assert classes(Alluxio().manifests(m)) == [local_class("forge-local-alluxio-journal", "/data/alluxio-journal")]


def test_one_data_path_leaves_the_other_volumes_on_their_class():
    text = edit(inventory_text("h200"), PROMETHEUS, PROMETHEUS + "    alertmanager_data_path: /data/alertmanager\n")
    m = model("h200", text)
    prom = Prometheus().values(m)
    assert prom["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "local-path"
    assert [c["metadata"]["name"] for c in classes(Prometheus().manifests(m))] == ["forge-local-alertmanager"]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_without_data_paths_forge_writes_no_class(cluster):
    for folder in ("prometheus", "loki", "alluxio"):
        assert not list((REPO / "overlays" / cluster / folder).glob("storageclass-*.yaml")), folder


@pytest.mark.parametrize("old, new, path, needle", [
    (LOKI, LOKI + "    data_path: data/loki\n", "components.loki.data_path",
     "data_path 'data/loki' is not a folder for volumes: an absolute path such as /data/prometheus"),
    (LOKI, LOKI + "    data_path: /\n", "components.loki.data_path", "data_path '/' is not a folder for volumes"),
    (LOKI, LOKI + "    data_path: /etc\n", "components.loki.data_path", "not / nor a system folder"),
    (LOKI, LOKI + "    data_path: /data/../etc\n", "components.loki.data_path", "data_path '/data/../etc' is not a folder"),
    (PROMETHEUS, PROMETHEUS + "    storage_class: fast\n    data_path: /data/prometheus\n", "components.prometheus.data_path",
     "both storage_class 'fast' and data_path: data_path makes forge's own class forge-local-prometheus on that folder; "
     "keep one of them"),
    (JOURNAL, "journal: {storage_class: local-path, data_path: /data/j, size_gib: 50,", "components.alluxio.journal.data_path",
     "both journal.storage_class 'local-path' and data_path: data_path makes forge's own class forge-local-alluxio-journal"),
])
def test_bad_data_paths_are_refused_at_their_line(old, new, path, needle):
    text = edit(inventory_text("h200"), old, new)
    p = only_problem(problems_of("h200", text), path)
    assert needle in p.message, p.message
    assert p.file == inventory_file("h200")
    assert p.line == line_of(text, "data_path:")


def test_a_relative_data_path_stops_generate_with_exit_2(tmp_path):
    root = copy_repo_inputs(tmp_path / "repo")
    path = root / inventory_file("a100")
    path.write_text(edit(path.read_text(), "  loki:\n", "  loki:\n    data_path: loki\n"))
    line = line_of(path.read_text(), "data_path: loki")
    result = CliRunner().invoke(main, ["generate", "--root", str(root)])
    assert result.exit_code == 2, result.output
    assert f"clusters/a100/inventory.yaml:{line}: components.loki.data_path: data_path 'loki' is not a folder" in result.output
    assert "Traceback" not in result.output
    assert not (root / "overlays").exists()
