"""`forge draw`: the SVG holds what the inventory says (checked as XML, never as pixels)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from forge.commands.draw import draw
from tests.helpers import cli, model

NS = {"s": "http://www.w3.org/2000/svg"}


def svg(cluster: str) -> ET.Element:
    return ET.fromstring(draw(model(cluster)))


def groups(root: ET.Element, cls: str) -> list[ET.Element]:
    return root.findall(f".//s:g[@class='{cls}']", NS)


@pytest.mark.parametrize("cluster", ["a100", "h200"])
def test_every_node_in_its_rack_with_its_gpus(cluster):
    m, root = model(cluster), svg(cluster)
    drawn = {n.get("data-node"): rack.get("data-rack") for rack in groups(root, "rack") for n in groups(rack, "node")}
    assert drawn == {n.name: n.rack for n in m.nodes}
    for node in groups(root, "node"):
        want = next(n for n in m.nodes if n.name == node.get("data-node"))
        assert len(groups(node, "gpu")) == want.gpu_count
        assert len(node.findall(".//s:rect[@class='nvme']", NS)) == len(want.nvme)


def test_mig_slices_are_drawn_on_the_gpus_their_layout_cuts():
    root = svg("h200")
    for node in groups(root, "node"):
        slices = Counter(r.get("data-profile") for r in node.findall(".//s:rect[@class='mig-slice']", NS))
        if node.get("data-node") in ("h200-gpu-17", "h200-gpu-18"):  # layout all-1g: 8 GPUs x 7 x 1g.18gb
            assert slices == {"1g.18gb": 56}
        else:
            assert not slices
    a100 = {n.get("data-node"): [g.get("data-mig") for g in groups(n, "gpu")] for n in groups(svg("a100"), "node")}
    assert a100["a100-gpu-10"].count("0") == 4 and len(a100["a100-gpu-10"]) == 8  # half-1g: four GPUs cut


def test_compute_nics_are_named_by_their_rail():
    m, root = model("h200"), svg("h200")
    node = next(n for n in groups(root, "node") if n.get("data-node") == "h200-gpu-01")
    rails = {r.get("data-interface"): r.get("data-rail") for r in node.findall(".//s:rect[@class='nic']", NS)
             if r.get("data-role") == "compute"}
    assert rails == {r.interface: r.name for r in m.rails}


@pytest.mark.parametrize("cluster", ["a100", "h200"])
def test_queue_shares_add_up_to_each_pool(cluster):
    facts = model(cluster).component_facts["kueue"]
    shares = Counter()
    for share in groups(svg(cluster), "share"):
        shares[share.get("data-flavor"), share.get("data-resource")] += int(share.get("data-nominal"))
    want = {(p.flavor, r): n for p in facts.capacity.pools for r, n in p.resources.items() if r.startswith("nvidia.com/")}
    assert dict(shares) == want


def test_the_picture_is_deterministic_and_the_command_writes_it(tmp_path):
    assert draw(model("h200")) == draw(model("h200"))
    out = tmp_path / "h200.svg"
    result = cli("draw", "h200", "-o", str(out))
    assert result.exit_code == 0 and out.read_text() == draw(model("h200"))


def test_bad_cluster_and_unwritable_output_are_one_line_exit_2(tmp_path):
    result = cli("draw", "h201")
    assert result.exit_code == 2 and "no cluster 'h201'" in result.output and "Traceback" not in result.output
    (tmp_path / "file").write_text("")
    result = cli("draw", "h200", "-o", str(tmp_path / "file" / "x.svg"))
    assert result.exit_code == 2 and result.output.startswith(f"error: cannot write {tmp_path / 'file' / 'x.svg'}")
