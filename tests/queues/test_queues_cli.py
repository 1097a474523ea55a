"""`forge queues CLUSTER`: the table of each project's quotas and the capacity per flavor."""
from __future__ import annotations

from click.testing import CliRunner

from forge.commands.main import main

from tests.helpers import REPO


def run(*args: str):
    return CliRunner().invoke(main, ["queues", *args, "--root", str(REPO)])


def test_h200_table():
    result = run("h200")
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    assert out[0] == "Kueue queues of h200"
    assert out[2] == ("4 ClusterQueues in cohort 'forge'; MIG strategy mixed; whole GPUs 128, "
                      "GPU equivalents 144 of 144 physical GPUs")
    rows = [line.split() for line in out]
    # capacity per flavor: flavor, nodes, racks, resource, unit, capacity, nominal over all queues
    assert ["h200-141gb", "16", "h200-r01,h200-r02,h200-r03,h200-r04", "nvidia.com/gpu", "whole", "GPU", "128", "128"] in rows
    assert ["h200-141gb-all-1g", "2", "h200-r05", "nvidia.com/mig-1g.18gb", "MIG", "1g.18gb", "slice", "112", "112"] in rows
    assert not [r for r in rows if r[:1] == ["h200-141gb-all-1g"] and "nvidia.com/gpu" in r]  # no whole GPU left there
    start = out.index("project finetune (share 20%)")
    assert out[start + 1].split() == ["flavor", "resource", "nominal", "borrowing", "limit", "lending", "limit", "reach", "capacity"]
    assert ["h200-141gb", "nvidia.com/gpu", "26", "102", "26", "128", "128"] in rows[start:start + 13]
    assert ["h200-141gb", "memory", "6554Gi", "26214Gi", "6554Gi", "32768Gi", "32768Gi"] in rows[start:start + 13]
    assert [line for line in out if line.startswith("project ")] == [
        "project training (share 50%)", "project finetune (share 20%)", "project embeddings (share 20%)", "project research (share 10%)"]


def test_a100_markdown():
    result = run("a100", "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert "### capacity per flavor" in result.output
    assert "| a100-80gb-half-1g | 1 | a100-r04 | nvidia.com/mig-1g.10gb | MIG 1g.10gb slice | 28 | 28 |" in result.output
    assert "### project research (share 10%)" in result.output
    assert "| a100-80gb-half-1g | nvidia.com/mig-1g.10gb | 11 | 17 | 11 | 28 | 28 |" in result.output


def test_unknown_cluster_and_help():
    result = run("h300")
    assert result.exit_code == 2
    assert "error: no cluster 'h300': clusters/h300/inventory.yaml does not exist (clusters: a100, h200, h200-burst)" in result.output
    result = CliRunner().invoke(main, ["queues", "--help"])
    assert result.exit_code == 0 and "--format [text|markdown]" in result.output
