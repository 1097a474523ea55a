"""Volumes name a StorageClass from the inventory, never the cluster's default; Alluxio masters
are sized from the expected file count."""
from __future__ import annotations

import math

import pytest
import yaml

from forge.components.alluxio import layout
from tests.helpers import REPO, edit, inventory_text, line_of, model, problems

CLUSTERS = ["a100", "h200"]
NO_CLASS = "  storage_class: local-path  # every volume forge claims, unless a component overrides it (README: values to confirm)\n"


def values(cluster: str, component: str) -> dict:
    return yaml.safe_load((REPO / "overlays" / cluster / component / "values.yaml").read_text())


def claims(node, path=()):
    """Every PVC spec / volumeClaimTemplate / chart persistence block in a values tree."""
    if isinstance(node, dict):
        if "volumeClaimTemplate" in node:
            yield path, node["volumeClaimTemplate"]["spec"].get("storageClassName")
        if "persistence" in node and isinstance(node["persistence"], dict):
            yield path, node["persistence"].get("storageClass")
        if "journal" in node and node["journal"].get("volumeType") == "persistentVolumeClaim":
            yield path, node["journal"].get("storageClass")
        for key, value in node.items():
            yield from claims(value, path + (key,))


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_claim_forge_sets_names_a_storage_class(cluster):
    found = {(component, path): sc for component in ("prometheus", "loki", "alluxio")
             for path, sc in claims(values(cluster, component))}
    # Prometheus, Alertmanager, Loki's targets with volumes, Alluxio's journal.
    assert ("prometheus", ("prometheus", "prometheusSpec", "storageSpec")) in found
    assert ("prometheus", ("alertmanager", "alertmanagerSpec", "storage")) in found
    assert any(c == "loki" for c, _ in found) and ("alluxio", ()) in found
    assert set(found.values()) == {"local-path"}
    # Grafana keeps no volume (its dashboards and data sources come from ConfigMaps).
    assert values(cluster, "prometheus")["grafana"].get("persistence", {}).get("enabled", False) is False


def test_a_component_override_wins_over_the_cluster_class():
    from forge.components.prometheus import Prometheus
    text = edit(inventory_text("a100"), "    retention_days: 15", "    retention_days: 15\n    storage_class: fast-nvme")
    m = model("a100", text)
    assert Prometheus().values(m)["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]["storageClassName"] == "fast-nvme"


def test_no_storage_class_is_refused_with_the_line_of_the_cluster_section():
    text = edit(inventory_text("h200"), NO_CLASS, "")
    found = problems(text)
    line = line_of(text, "cluster:", whole=True)
    for component in ("prometheus", "loki"):
        assert any(p.startswith(f"clusters/h200/inventory.yaml:{line}: cluster: no storage_class: {component} claims volumes")
                   for p in found), (component, found)
    # The journal's own class is enough for Alluxio; without it Alluxio is refused too.
    assert not any("alluxio claims volumes" in p for p in found)
    bare = edit(text, "journal: {storage_class: local-path, size_gib: 50,", "journal: {size_gib: 50,")
    assert any("cluster: no storage_class: alluxio claims volumes (the masters' embedded journal)" in p for p in problems(bare))


def test_alluxio_master_heap_and_limit_from_the_expected_file_count():
    size = layout.master_size(10_000_000)
    assert size.heap_gib == math.ceil(4 + 10_000_000 * 2048 / 2**30) == 24
    assert (size.direct_gib, size.limit_gib) == (4, 24 + 4 + 4)
    assert size.jvm_options == ["-Xms24g", "-Xmx24g", "-XX:MaxDirectMemorySize=4g"]
    assert layout.master_size(1_000_000).heap_gib == 6 < size.heap_gib
    assert layout.master_size(50_000_000).inode_cache == layout.INODE_CACHE_MAX  # the rest stays in RocksDB
    master = values("h200", "alluxio")["master"]
    assert master["jvmOptions"] == size.jvm_options
    assert master["resources"]["limits"]["memory"] == master["resources"]["requests"]["memory"] == "32Gi"
    assert values("h200", "alluxio")["properties"]["alluxio.master.metastore.inode.cache.max.size"] == "10000000"


def test_masters_that_outgrow_the_control_plane_are_refused():
    text = edit(inventory_text("a100"), "    masters: 3", "    masters: 3\n    expected_files: 200000000", 1)
    text = edit(text, "    memory_gib: 128", "    memory_gib: 48")
    found = [p for p in problems(text, "clusters/a100/inventory.yaml") if "expected_files" in p]
    assert len(found) == 1 and "need 32 GiB per Alluxio master (24 GiB heap), more than 50% of control-plane node" in found[0]
    assert model("a100").component_facts["alluxio"].master.limit_gib == 32
