"""The one rule for which MIG layout a node runs: decided here, read by the model, the inventory
checks and `forge node`."""
from __future__ import annotations

from forge.facts.hardware import GPU_MODELS
from forge.inventory.schema import Node, Profile

MIG_DISABLED = "all-disabled"  # the GPU Operator's own name for "no MIG"; always in our config


def mig_layout_named(node: Node, profile: Profile) -> str | None:
    """The layout the inventory names for the node: its own, else its profile's (None: neither)."""
    return node.mig_layout or profile.mig_layout


def mig_layout_of(node: Node, profile: Profile) -> str | None:
    """The node's effective layout: the one it names, else MIG off; None when its GPUs cannot do
    MIG (or it has none), so no layout applies."""
    if not (profile.gpu and GPU_MODELS[profile.gpu.model].mig_capable):
        return None
    return mig_layout_named(node, profile) or MIG_DISABLED
