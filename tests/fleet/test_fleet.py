"""The fleet stage (forge.fleet): one pass over every inventory, rules across clusters and
cluster folders, typed settings, per-component facts derived once."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

from forge.commands.main import main
from forge.components import COMPONENTS
from forge.components.alluxio import Alluxio, tier_layout
from forge.components.flyte import Flyte, capacity
from forge.errors import InventoryError
from forge.fleet import components_of, load_fleet, load_plan_text
from forge.inventory.layouts import MIG_DISABLED
from tests.helpers import REPO, inventory_text


def line_of(text: str, needle: str, whole: bool = False) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if (line == needle if whole else needle in line))


def generate(root: Path):
    return CliRunner().invoke(main, ["generate", "--root", str(root)])


def test_the_shipped_fleet_has_one_plan_per_cluster():
    fleet = load_fleet(REPO)
    assert [p.name for p in fleet] == ["a100", "h200", "h200-burst"]
    for plan in fleet:
        assert plan.components == tuple(c for c in COMPONENTS if c.enabled(plan.cluster))
        assert components_of(plan.cluster) == plan.components
        assert set(plan.cluster.component_settings) == {c.name for c in plan.components}
    assert "network-operator" not in {c.name for c in fleet.plan("a100").components}
    assert fleet.pins["alluxio"].chart == "alluxio"


def test_settings_are_typed_and_facts_frozen_once():
    cluster = load_fleet(REPO).plan("h200").cluster
    for name, settings in cluster.component_settings.items():
        assert not isinstance(settings, dict), name  # a component's Settings instance, never the raw block
    for name, facts in cluster.component_facts.items():
        assert facts is None or (dataclasses.is_dataclass(facts) and type(facts).__dataclass_params__.frozen), name
    alluxio = Alluxio().facts(cluster)
    assert alluxio.layout == tier_layout(cluster, Alluxio().settings(cluster))
    assert Flyte().facts(cluster).capacity == capacity(cluster)
    assert Flyte().facts(cluster).limits.gpus == max(n.gpu_count for n in cluster.workload_nodes)


def test_a_node_name_in_two_clusters_is_an_error_naming_both(repo_inputs: Path):
    a100 = repo_inputs / "clusters/a100/inventory.yaml"
    text = a100.read_text().replace("  - name: a100-cp-01\n", "  - name: h200-cp-01\n", 1)
    a100.write_text(text)
    h200_line = line_of(inventory_text("h200"), "name: h200-cp-01")
    result = generate(repo_inputs)
    assert result.exit_code == 2
    assert (f"error: clusters/h200/inventory.yaml:{h200_line}: nodes[0].name: node 'h200-cp-01' is also in cluster 'a100' "
            f"(clusters/a100/inventory.yaml:{line_of(text, 'name: h200-cp-01')}): a node belongs to one cluster") in result.output
    assert not (repo_inputs / "overlays").exists()


def test_a_cluster_folder_without_inventory_but_with_files_is_refused(repo_inputs: Path):
    assert generate(repo_inputs).exit_code == 0
    stray = repo_inputs / "clusters/b200/argocd/x.yaml"
    stray.parent.mkdir(parents=True)
    stray.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    before = sorted(p.relative_to(repo_inputs).as_posix() for p in repo_inputs.rglob("*") if p.is_file())
    result = generate(repo_inputs)
    assert result.exit_code == 2
    assert result.output.splitlines()[0] == (
        "error: clusters/b200/inventory.yaml:1: <top>: missing, but clusters/b200/ holds argocd/x.yaml, which forge did not "
        "generate and would delete: restore clusters/b200/inventory.yaml, or move those files out and delete clusters/b200/ "
        "to retire the cluster")
    assert stray.is_file()
    assert sorted(p.relative_to(repo_inputs).as_posix() for p in repo_inputs.rglob("*") if p.is_file()) == before


def test_a_retired_cluster_folder_holding_only_generated_files_is_fine(repo_inputs: Path):
    assert generate(repo_inputs).exit_code == 0
    (repo_inputs / "clusters/a100/inventory.yaml").unlink()
    assert generate(repo_inputs).exit_code == 0
    assert not (repo_inputs / "clusters/a100/argocd").exists()


def test_the_folder_name_must_match_the_cluster_name(repo_inputs: Path):
    (repo_inputs / "clusters/a100").rename(repo_inputs / "clusters/a100x")
    text = (repo_inputs / "clusters/a100x/inventory.yaml").read_text()
    result = generate(repo_inputs)
    assert result.exit_code == 2
    assert (f"error: clusters/a100x/inventory.yaml:{line_of(text, '  name: a100')}: cluster.name: is 'a100' but the folder "
            "is 'a100x'; they must match") in result.output


def test_priority_classes_of_the_wrong_type_are_a_normal_error():
    """Flyte's check reads the scheduling settings typed: a broken block is reported once, at its
    line, and is not guessed from (it used to crash with a TypeError)."""
    text = inventory_text("h200")
    start = text.index("  scheduling:\n")
    end = text.index("\n  alluxio:\n")
    text = text[:start] + "  scheduling:\n    priority_classes: 5" + text[end:]
    with pytest.raises(InventoryError) as err:
        load_plan_text(text, "clusters/h200/inventory.yaml")
    assert [str(p) for p in err.value.problems] == [
        f"clusters/h200/inventory.yaml:{line_of(text, 'priority_classes: 5')}: components.scheduling.priority_classes: "
        "expected a list, got integer 5"]


def test_flyte_reads_alluxios_typed_buckets():
    text = inventory_text("h200")
    block = text[text.index("  alluxio:\n"):text.index("\n  flyte:\n")]
    buckets_line = next(line for line in block.splitlines() if "buckets:" in line)
    assert "flyte" in buckets_line
    edited = buckets_line.replace(", flyte", "").replace("flyte, ", "")
    assert edited != buckets_line
    text = text.replace(buckets_line, edited, 1)
    with pytest.raises(InventoryError) as err:
        load_plan_text(text, "clusters/h200/inventory.yaml")
    assert [str(p) for p in err.value.problems] == [
        f"clusters/h200/inventory.yaml:{line_of(text, '  flyte:', whole=True)}: components.flyte: Flyte's storage goes through "
        "Alluxio's S3 endpoint: list 'flyte' in components.alluxio.buckets"]


def test_a_nodes_mig_layout_is_decided_once():
    h200 = load_fleet(REPO).plan("h200")
    inv = h200.loaded.inventory
    laid_out = set()
    for node, model in zip(inv.nodes, h200.cluster.nodes):
        profile = inv.profiles[node.profile]
        # H200s can do MIG: a layout, MIG off by default; nodes without GPUs have none at all.
        assert model.mig_layout == ((node.mig_layout or profile.mig_layout or MIG_DISABLED) if profile.gpu else None)
        laid_out.add(model.mig_layout)
    assert None in laid_out and MIG_DISABLED in laid_out and len(laid_out) > 2  # the shipped fleet has each case
