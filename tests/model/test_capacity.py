"""Capacity per GPU pool and extended resource (forge.model.capacity), under both MIG strategies: whole
GPUs as nvidia.com/gpu, MIG slices as their own resource (mixed) or, when no GPU is left whole, as
nvidia.com/gpu (single), and never more GPUs than the fleet has."""
from __future__ import annotations

from fractions import Fraction

from tests.helpers import edit, inventory_text, model

from forge.model.capacity import GPU, capacity, node_gpus

# h200 with its MIG nodes cut three ways (3g + 2g + 2 x 1g = 7 compute, 8 memory slices): the
# layout is no longer uniform, so each profile of it is its own resource.
MIXED_H200 = ("profiles: {1g.18gb: 7}", "profiles: {3g.71gb: 1, 2g.35gb: 1, 1g.18gb: 2}")
# h200 with every GPU node cut into 7 x 1g.18gb (the profile names the layout): no whole GPU is
# left, the one shape the single strategy fits.
ALL_MIG_H200 = ("    gpu: {model: H200-141GB, count: 8, nvlink: 4}\n",
                "    gpu: {model: H200-141GB, count: 8, nvlink: 4}\n    mig_layout: all-1g\n")


def test_mixed_strategy_h200_whole_gpus_and_slices_on_their_own_flavor():
    m = model("h200")
    assert m.mig_strategy == "mixed"  # 16 nodes keep whole GPUs next to the 2 cut ones
    cap = capacity(m)
    whole, mig = cap.pools
    assert (whole.flavor, mig.flavor) == ("h200-141gb", "h200-141gb-all-1g")
    assert whole.node_labels == {"forge.exa.ai/gpu-model": "H200-141GB", "nvidia.com/mig.config": "all-disabled"}
    assert mig.node_labels == {"forge.exa.ai/gpu-model": "H200-141GB", "nvidia.com/mig.config": "all-1g"}
    assert whole.resources[GPU] == 16 * 8 and whole.unit(GPU) == "whole GPU"
    # mixed: the 1g.18gb slices are their own resource, 7 per GPU; the cut nodes offer no nvidia.com/gpu
    assert GPU not in mig.resources and mig.resources["nvidia.com/mig-1g.18gb"] == 2 * 8 * 7
    assert cap.total(GPU) == cap.whole_gpus == 128
    assert (whole.gpu_equivalents(), mig.gpu_equivalents()) == (128, 16)
    assert mig.racks == ("h200-r05",) and len(whole.racks) == 4


def test_single_strategy_only_when_every_gpu_is_cut_slices_as_nvidia_gpu():
    m = model("h200", edit(inventory_text("h200"), *ALL_MIG_H200))
    assert m.mig_strategy == "single"
    cap = capacity(m)
    [mig] = cap.pools
    assert mig.flavor == "h200-141gb-all-1g" and len(mig.nodes) == 18
    # single: the device plugin offers the 1g.18gb slices as nvidia.com/gpu, 7 per GPU
    assert mig.resources[GPU] == 18 * 8 * 7 and mig.unit(GPU) == "MIG 1g.18gb slice"
    assert cap.whole_gpus == 0 and mig.gpu_equivalents() == 144


def test_mixed_strategy_a100_never_counts_cut_gpus_as_whole():
    m = model("a100")
    assert m.mig_strategy == "mixed"
    cap = capacity(m)
    assert [p.flavor for p in cap.pools] == ["a100-80gb", "a100-80gb-half-1g"]
    half = cap.pool("a100-80gb-half-1g")
    assert half.resources == {"cpu": 96, "memory": 1024, GPU: 4, "nvidia.com/mig-1g.10gb": 28}
    assert cap.total(GPU) == cap.whole_gpus == 76 < m.gpu_count == 80  # issue 12: was 80
    assert sum(p.gpu_equivalents() for p in cap.pools) == 80


def test_mixed_strategy_fixture_each_profile_its_own_resource():
    m = model("h200", edit(inventory_text("h200"), *MIXED_H200))
    assert m.mig_strategy == "mixed"
    cap = capacity(m)
    mig = cap.pool("h200-141gb-all-1g")
    assert GPU not in mig.resources  # every GPU of those nodes is cut
    assert {r: n for r, n in mig.resources.items() if r.startswith("nvidia.com/mig-")} == {
        "nvidia.com/mig-1g.18gb": 32, "nvidia.com/mig-2g.35gb": 16, "nvidia.com/mig-3g.71gb": 16}
    assert cap.total(GPU) == cap.whole_gpus == 128
    assert mig.gpu_equivalents() == Fraction(16 * (1 * 2 + 2 + 3), 7) == 16


def test_node_gpus_mixed_layout_over_some_gpus():
    m = model("a100")
    node = next(n for n in m.nodes if n.name == "a100-gpu-10")
    gpus, slices = node_gpus(node, m.settings.mig_layouts, "mixed")
    assert gpus == {GPU: 4, "nvidia.com/mig-1g.10gb": 28}
    assert slices == {"nvidia.com/mig-1g.10gb": ("1g.10gb", 1)}


def test_mig_lab_fixture_every_layout_counted_and_never_more_than_24_gpus():
    """tests/fixtures mig-lab (mixed strategy): one node all 1g.10gb, one cut into halves and small
    slices with GPUs 6-7 whole, one whole."""
    from forge.fleet import load_plan

    from tests.helpers import REPO

    path = REPO / "tests/fixtures/clusters/mig-lab/inventory.yaml"
    m = load_plan(path, "tests/fixtures/clusters/mig-lab/inventory.yaml").cluster
    assert m.mig_strategy == "mixed"
    cap = capacity(m)
    assert {p.flavor: p.resources for p in cap.pools} == {
        "a100-80gb": {"cpu": 96, "memory": 1024, GPU: 8},
        "a100-80gb-all-1g": {"cpu": 96, "memory": 1024, "nvidia.com/mig-1g.10gb": 56},
        "a100-80gb-halves-and-smalls": {"cpu": 96, "memory": 1024, GPU: 2, "nvidia.com/mig-1g.10gb": 6,
                                        "nvidia.com/mig-2g.20gb": 4, "nvidia.com/mig-3g.40gb": 8},
    }
    assert cap.total(GPU) == cap.whole_gpus == 10  # 8 + GPUs 6 and 7 of ml-gpu-02
    # 10 whole + 56/7 + (6 x 1 + 4 x 2 + 8 x 3)/7 = 10 + 8 + 38/7: the cut GPUs' slices leave compute idle
    assert sum(p.gpu_equivalents() for p in cap.pools) == 18 + Fraction(38, 7) <= 24
