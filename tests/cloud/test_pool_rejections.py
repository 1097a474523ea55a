"""Every inventory field of a cloud cluster (cluster.cloud, node_pools) refused with its
file:line and field, saying what to change, on the shipped h200-burst inventory edited as a
careless pull request would; one case through the real CLI (exit 2, no traceback, nothing written)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, edit, inventory_text, line_of, problems

FILE = "clusters/h200-burst/inventory.yaml"
TEXT = inventory_text("h200-burst")
SPOT = "  - name: h200-reserved\n"  # the first GPU pool, node_pools[1]

# (id, old, new, the line's needle, field path, words of the message)
CASES = [
    ("cloud.provider", "    provider: aws\n    region: us-west-2\n    account", "    provider: gcp\n    region: us-west-2\n    account", "provider: gcp", "cluster.cloud.provider", "'aws'"),
    ("cloud.region", "    region: us-west-2\n    account", "    region: us_west_2\n    account", "us_west_2", "cluster.cloud.region", "us_west_2"),
    ("cloud.account", 'account: "111122223333"', 'account: "1111-2222"', "1111-2222", "cluster.cloud.account", "[0-9]{12}"),
    ("cloud.unknown-key", "    provider: aws\n    region: us-west-2\n    account", "    provider: aws\n    zone: a\n    region: us-west-2\n    account", "zone: a", "cluster.cloud.zone", "expected one of: provider, region, account"),
    ("pool.name", SPOT, "  - name: H200_Spot\n", "H200_Spot", "node_pools[1].name", "DNS labels"),
    ("pool.name-duplicate", SPOT, "  - name: cpu\n", None, "node_pools[3].name", "duplicate node pool name 'cpu'"),
    ("pool.instance_type", SPOT + "    instance_type: p5e.48xlarge", SPOT + "    instance_type: p5e.48huge", "p5e.48huge", "node_pools[1].instance_type",
     "did you mean: p5e.48xlarge"),
    ("pool.role", SPOT + "    instance_type: p5e.48xlarge\n    role: gpu\n", SPOT + "    instance_type: p5e.48xlarge\n    role: cpu\n", None, "node_pools[1].role", "use role gpu"),
    ("pool.role-literal", SPOT + "    instance_type: p5e.48xlarge\n    role: gpu\n", SPOT + "    instance_type: p5e.48xlarge\n    role: training\n", "role: training", "node_pools[1].role", "'system', 'gpu' or 'cpu'"),
    ("pool.capacity_type", "    capacity_type: reserved\n", "    capacity_type: dedicated\n", "dedicated", "node_pools[1].capacity_type", "'spot', 'on-demand' or 'reserved'"),
    ("pool.capacity_type-system", "    capacity_type: on-demand\n    max_count: 3\n", "    capacity_type: spot\n    max_count: 3\n",
     None, "node_pools[0].capacity_type", "use on-demand"),
    ("pool.max_count", "    max_count: 100\n", "    max_count: 0\n", "max_count: 0", "node_pools[1].max_count", "greater than 0"),
    ("pool.max_count-huge", "    max_count: 100\n", "    max_count: 100000\n", "max_count: 100000", "node_pools[1].max_count", "at most 1,000"),
    ("pool.efa", "    max_count: 10\n", "    max_count: 10\n    efa: true\n", "efa: true", "node_pools[3].efa", "m7i.8xlarge has no EFA interfaces"),
    ("pool.efa-type", "    max_count: 100\n", "    max_count: 100\n    efa: 'yes'\n", "efa: 'yes'", "node_pools[1].efa", "true or false"),
    ("pool.labels", "max_count: 100\n    placement_group: h200-burst-p5e\n    labels:\n      exa.ai/pool: burst\n",
     "max_count: 100\n    placement_group: h200-burst-p5e\n    labels:\n      kubernetes.io/pool: burst\n", "kubernetes.io/pool", "node_pools[1].labels.kubernetes.io/pool",
     "reserved prefix"),
    ("pool.taints", "      - {key: nvidia.com/gpu, effect: NoSchedule}\n  # The fallback",
     "      - {key: nvidia.com/gpu, effect: NoSchedule}\n      - {key: nvidia.com/gpu, effect: NoSchedule}\n  # The fallback",
     None, "node_pools[1].taints", "given 2 times"),
    ("pool.weight", "    capacity_type: reserved\n", "    capacity_type: reserved\n    weight: 0\n", "weight: 0", "node_pools[1].weight",
     "greater than or equal to 1"),
    ("pool.weight-system", "    capacity_type: on-demand\n    max_count: 3\n", "    capacity_type: on-demand\n    weight: 50\n    max_count: 3\n",
     "weight: 50", "node_pools[0].weight", "Karpenter never makes"),
    ("pool.placement_group", "    placement_group: h200-burst-p5e\n    labels:\n      exa.ai/pool: burst\n    taints:\n      - {key: nvidia.com/gpu, effect: NoSchedule}\n  # The",
     "    placement_group: 'my group'\n    labels:\n      exa.ai/pool: burst\n    taints:\n      - {key: nvidia.com/gpu, effect: NoSchedule}\n  # The",
     "my group", "node_pools[1].placement_group", "expected form"),
    ("pool.placement_group-system", "    capacity_type: on-demand\n    max_count: 3\n",
     "    capacity_type: on-demand\n    max_count: 3\n    placement_group: pg\n", "placement_group: pg", "node_pools[0].placement_group", "remove placement_group"),
    ("pool.capacity_type-system-reserved", "    capacity_type: on-demand\n    max_count: 3\n", "    capacity_type: reserved\n    max_count: 3\n",
     None, "node_pools[0].capacity_type", "use on-demand"),
    ("pool.mig_layout", "    max_count: 100\n", "    max_count: 100\n    mig_layout: all-1g\n", "mig_layout: all-1g",
     "node_pools[1].mig_layout", "define it under cluster.mig_layouts"),
    ("pool.mig_layout-cpu", "    max_count: 10\n", "    max_count: 10\n    mig_layout: all-1g\n", "mig_layout: all-1g",
     "node_pools[3].mig_layout", "unknown MIG layout"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_pool_field_names_its_line_and_what_to_change(case):
    _, old, new, needle, path, words = case
    text = edit(TEXT, old, new)
    found = problems(text, FILE)
    mine = [p for p in found if f": {path}: " in p]
    assert mine, found
    if needle is not None:
        assert mine[0].startswith(f"{FILE}:{line_of(text, needle)}: {path}: "), found
    assert words in mine[0], mine[0]


def test_nodes_in_a_cloud_cluster_and_pools_on_premises():
    text = edit(TEXT, "node_pools:\n", "nodes:\n  - {name: n1, profile: p, rack: r, roles: [gpu]}\nnode_pools:\n")
    assert any(p.startswith(f"{FILE}:{line_of(text, 'nodes:', whole=True)}: nodes: a cloud cluster (cluster.cloud) has node_pools, not nodes")
               for p in problems(text, FILE))
    onprem = edit(TEXT, "  cloud:\n    provider: aws\n    region: us-west-2\n", "  cloudless:\n    provider: aws\n    region: us-west-2\n")
    assert any("cluster.cloudless" in p for p in problems(onprem, FILE))
    onprem = edit(TEXT, '  cloud:\n    provider: aws\n    region: us-west-2\n    account: "111122223333"', "  # no cloud")
    assert any(p.startswith(f"{FILE}:{line_of(onprem, 'node_pools:', whole=True)}: node_pools: node pools are for a cloud cluster")
               for p in problems(onprem, FILE))


def test_a_cloud_cluster_without_a_system_pool():
    text = edit(TEXT, "    role: system\n    capacity_type: on-demand\n", "    role: cpu\n    capacity_type: on-demand\n")
    assert f"{FILE}:{line_of(text, 'node_pools:', whole=True)}: node_pools: no pool with role system" in "\n".join(problems(text, FILE))


def test_the_cli_refuses_a_bad_pool_with_one_line_and_exit_2(tmp_path: Path):
    repo = tmp_path / "repo"
    for part in ("clusters", "base", "charts", "ci"):
        shutil.copytree(REPO / part, repo / part)
    shutil.copy(REPO / "pyproject.toml", repo / "pyproject.toml")
    text = edit(TEXT, "    max_count: 100\n", "    max_count: -5\n")
    (repo / FILE).write_text(text)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p.endswith("generators"))}
    proc = subprocess.run([sys.executable, "-m", "forge.commands.main", "generate", "--root", str(repo)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[0].startswith(f"error: {FILE}:{line_of(text, 'max_count: -5')}: node_pools[1].max_count: ")
    assert not (repo / "overlays").exists()
