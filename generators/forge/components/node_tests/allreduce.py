"""The NCCL all-reduce script both bandwidth tests run (torchrun, one rank per GPU), shipped once
per cluster in the ConfigMap `forge-node-test-nccl` (`nccl-script.yaml`):

* in-node (nvlink.py): one all-reduce over every GPU of the node (`FORGE_NODE_*`);
* per rail (nccl.py): GPU i of the node and GPU i of its peer in a two-rank group, all groups at
  once (`FORGE_RAIL_*`), then, where the catalogue has a two-node figure, one all-reduce over
  every GPU of both nodes (`FORGE_PAIR_*`).

Each check reads its floor and the shape it applies to (message bytes, timed iterations: the
catalogue's `shape`, forge.facts.hardware_floors) from the environment and reports nccl-tests' bus
bandwidth, busbw = algbw * 2(n-1)/n for n ranks (nccl-tests doc/PERFORMANCE.md). The pod exits 1
when one is below its floor, so the Job fails and NodeTestFailed names the test and the node.
"""
from __future__ import annotations

from typing import Any

from forge.facts.hardware_floors import TestShape

SCRIPT = "forge-node-test-nccl"  # the ConfigMap
FILE = "allreduce.py"
PATH = f"/workspace/{FILE}"

_SCRIPT = """\
import os, sys, time, torch, torch.distributed as dist


def busbw(group, ranks, size, iters):
    x = torch.ones(size // 4, device="cuda")
    for _ in range(5):
        dist.all_reduce(x, group=group)
    torch.cuda.synchronize()
    start = time.time()
    for _ in range(iters):
        dist.all_reduce(x, group=group)
    torch.cuda.synchronize()
    del x
    return iters * size / (time.time() - start) / 1e9 * 2 * (ranks - 1) / ranks


def check(name, group, ranks):
    floor = float(os.environ[f"FORGE_{name}_FLOOR_GBYTES"])
    size, iters = int(os.environ[f"FORGE_{name}_MESSAGE_BYTES"]), int(os.environ[f"FORGE_{name}_ITERATIONS"])
    found = [None] * dist.get_world_size()
    dist.all_gather_object(found, busbw(group, ranks, size, iters))
    return found, floor


dist.init_process_group("nccl")
local, per_node, world = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"]), dist.get_world_size()
torch.cuda.set_device(local)
failed = []
if "FORGE_NODE_FLOOR_GBYTES" in os.environ:  # in-node: every GPU of the node (NVLink)
    found, floor = check("NODE", None, world)
    if min(found) < floor:
        failed.append("node")
    if dist.get_rank() == 0:
        print(f"all {world} GPUs of the node: {min(found):.1f} GB/s bus bandwidth (floor {floor:g} GB/s)")
if "FORGE_RAIL_FLOOR_GBYTES" in os.environ:  # per rail: GPU i of each node in a two-rank group
    groups = [dist.new_group([i, per_node + i]) for i in range(per_node)]
    found, floor = check("RAIL", groups[local], 2)
    rails = [min(found[i], found[per_node + i]) for i in range(per_node)]
    failed += [f"rail {i}" for i, bw in enumerate(rails) if bw < floor]
    if dist.get_rank() == 0:
        for i, bw in enumerate(rails):
            verdict = "FAILED" if f"rail {i}" in failed else "passed"
            print(f"gpu {i} and its rail: {bw:.1f} GB/s bus bandwidth (floor {floor:g} GB/s): {verdict}")
if "FORGE_PAIR_FLOOR_GBYTES" in os.environ:  # both nodes, every rail at once
    found, floor = check("PAIR", None, world)
    if min(found) < floor:
        failed.append("two nodes")
    if dist.get_rank() == 0:
        print(f"all {world} GPUs of both nodes: {min(found):.1f} GB/s bus bandwidth (floor {floor:g} GB/s)")
if dist.get_rank() == 0:
    print(f"FAILED: {', '.join(failed)}" if failed else "passed")
dist.destroy_process_group()
sys.exit(1 if failed else 0)
"""


def script(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": SCRIPT, "namespace": namespace},
            "data": {FILE: _SCRIPT}}


def floor_env(name: str, busbw_gbytes: float, shape: TestShape) -> list[dict[str, str]]:
    """One check's floor and test shape, as the script reads them."""
    return [{"name": f"FORGE_{name}_FLOOR_GBYTES", "value": f"{busbw_gbytes:g}"},
            {"name": f"FORGE_{name}_MESSAGE_BYTES", "value": str(shape.message_bytes)},
            {"name": f"FORGE_{name}_ITERATIONS", "value": str(shape.iterations)}]
