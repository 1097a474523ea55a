"""Shared helpers of the data-and-scheduling tests (Alluxio, Flyte, operators, priorities).

Inventories are the repo's real ones, edited as text where a test needs a bad input, so every
rejection can be checked for its message and its exact `file:line`.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from forge.errors import ForgeError, InventoryError, Problem
from forge.fleet import load_plan_text
from forge.inventory.loader import LoadedInventory
from forge.model import ClusterModel
from forge.tools import kustomize_build_command

REPO = Path(__file__).resolve().parents[2]
CLUSTERS = ("h200", "a100")
UPSTREAM = os.environ.get("FORGE_UPSTREAM")
needs_upstream = pytest.mark.skipif(
    not UPSTREAM, reason="FORGE_UPSTREAM is not set: the upstream charts' values and CRDs are not available")


def inventory_file(cluster: str) -> str:
    return f"clusters/{cluster}/inventory.yaml"


def inventory_text(cluster: str) -> str:
    return (REPO / inventory_file(cluster)).read_text()


def load(cluster: str, text: str | None = None) -> LoadedInventory:
    return load_plan_text(inventory_text(cluster) if text is None else text, inventory_file(cluster)).loaded


def model(cluster: str, text: str | None = None) -> ClusterModel:
    return load_plan_text(inventory_text(cluster) if text is None else text, inventory_file(cluster)).cluster


def edit(text: str, old: str, new: str, count: int = 1) -> str:
    """Replace `old` exactly `count` times; fails loudly when the inventory no longer has it."""
    assert text.count(old) == count, f"expected {count} x {old!r} in the inventory, found {text.count(old)}"
    return text.replace(old, new)


def problems_of(cluster: str, text: str) -> list[Problem]:
    with pytest.raises(InventoryError) as err:
        load(cluster, text)
    return err.value.problems


def line_of(text: str, needle: str, nth: int = 1, whole: bool = False) -> int:
    """1-based line of the nth line containing needle (whole: the line is exactly needle)."""
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if (line == needle if whole else needle in line)]
    assert len(hits) >= nth, f"{needle!r} found {len(hits)} times"
    return hits[nth - 1]


def only_problem(problems: list[Problem], path: str) -> Problem:
    found = [p for p in problems if p.path == path]
    assert len(found) == 1, f"expected one problem at {path}, got: {[str(p) for p in problems]}"
    return found[0]


def generated(path: str) -> Any:
    """One generated YAML file of the repo, without its header comment."""
    return yaml.safe_load((REPO / path).read_text())


def generated_dir(folder: str, prefix: str = "") -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted((REPO / folder).glob(f"{prefix}*.yaml"))
            if p.name != "kustomization.yaml" and p.name != "values.yaml"]


def rendered(cluster: str, component: str) -> list[dict[str, Any]]:
    """`kustomize build` of one overlay, as Argo CD would build it (skips without kustomize)."""
    try:
        command = kustomize_build_command(REPO)
    except ForgeError as exc:  # no kustomize, nor kubectl
        pytest.skip(f"no kustomize to render with: {exc}")
    proc = subprocess.run([*command, str(REPO / "overlays" / cluster / component)],
                          capture_output=True, text=True, check=True)
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def upstream_dir(name: str) -> Path:
    path = Path(UPSTREAM or "") / name
    if not path.is_dir():
        pytest.fail(f"FORGE_UPSTREAM={UPSTREAM} has no {name}/")
    return path


Edit = Callable[[str], str]
