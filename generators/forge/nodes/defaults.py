"""What `forge node add` assumes when not told: a new GPU node's taints, and that its rack is one
the cluster already uses (a rack no node is in is a typo unless --new-rack)."""
from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

from forge.errors import ForgeError
from forge.inventory.loader import LoadedInventory

if TYPE_CHECKING:
    from forge.nodes.yamltext import NodeText

GPU_TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}  # keeps pods that ask for no GPU off GPU nodes


def profile_taints(old: LoadedInventory, profile: str) -> list[dict[str, str]]:
    """A new GPU node's taints without --like: those every node of its profile has (none yet: the
    GPU taint), so it is not left open to pods that ask for no GPU."""
    peers = [n for n in old.inventory.nodes if n.profile == profile]
    if not peers:
        return [dict(GPU_TAINT)]
    first = [{"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect} for t in peers[0].taints]
    common = set.intersection(*({(t.key, t.value, t.effect) for t in p.taints} for p in peers))
    return [t for t in first if (t["key"], t.get("value", ""), t["effect"]) in common]


def check_rack(old: LoadedInventory, doc: NodeText, file: str, rack: str, new_rack: bool) -> None:
    """A rack no node of the cluster is in is a typo unless said otherwise (--new-rack)."""
    racks = sorted({n.rack for n in old.inventory.nodes})
    if rack in racks or new_rack:
        return
    close = difflib.get_close_matches(rack, racks, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise ForgeError(f"{file}:{doc.doc.lc.key('nodes')[0] + 1}: nodes: no node is in rack '{rack}' for --rack: {hint}"
                     f"racks in use: {', '.join(racks)}; a rack this cluster does not use yet needs --new-rack")
