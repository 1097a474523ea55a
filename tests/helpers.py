"""The helpers every test folder shares: the repo and its real inventories, inventory edits with
line numbers, the loader's problems, generated and rendered files, upstream chart data, throwaway
repo copies (plain or git) and the forge CLI run in-process.

Inventories are the repo's real ones, edited as text where a test needs a bad input, so every
rejection can be checked for its message and its exact `file:line`. Fixtures live in
tests/conftest.py; this module holds plain functions only.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from click.testing import CliRunner, Result

from forge.facts.versions import chart_pins
from forge.commands.main import main
from forge.errors import ForgeError, InventoryError, Problem
from forge.generate.tree import build_tree
from forge.inventory.loader import LoadedInventory
from forge.fleet import load_plan_text
from forge.model.cluster import ClusterModel
from forge.tools import kustomize_build_command
from forge.generate.writer import write_tree

REPO = Path(__file__).resolve().parents[1]
CLUSTERS = ("h200", "a100")
H200_FILE = "clusters/h200/inventory.yaml"
A100_FILE = "clusters/a100/inventory.yaml"
UPSTREAM = os.environ.get("FORGE_UPSTREAM")
needs_upstream = pytest.mark.skipif(
    not UPSTREAM, reason="FORGE_UPSTREAM is not set: the upstream charts' values and CRDs are not available")

Edit = Callable[[str], str]


# ---- the real inventories, edited as text ----------------------------------------------------------

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


def without_mig_shares(text: str, layout: str = "all-1g") -> str:
    """The inventory without Kueue's shares of a MIG pool; a `projects:` left with no entry becomes `{}`."""
    text = "".join(line for line in text.splitlines(keepends=True) if f"flavor_shares: {{{layout}" not in line)
    return re.sub(r"^(    projects:)\n((?:      #.*\n)*)(?!      \S)", r"\1 {}\n\2", text, flags=re.M)


def line_of(text: str, needle: str, nth: int | None = None, whole: bool = False) -> int:
    """1-based line of the line holding needle (whole: the line is exactly needle). Without nth the
    needle must be on one line only, so a test points at the line it means; nth picks the nth."""
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if (line == needle if whole else needle in line)]
    if nth is None:
        assert len(hits) == 1, f"{needle!r} is on lines {hits}"
        return hits[0]
    assert len(hits) >= nth, f"{needle!r} found {len(hits)} times"
    return hits[nth - 1]


# ---- what the loader reports -----------------------------------------------------------------------

def problems_of(cluster: str, text: str) -> list[Problem]:
    """The loader's problems for this inventory text of `cluster` (the load must fail)."""
    with pytest.raises(InventoryError) as err:
        load(cluster, text)
    return err.value.problems


def problems(text: str, file: str = H200_FILE) -> list[str]:
    """Every problem the loader reports for this inventory text, as `file:line: path: message`."""
    with pytest.raises(InventoryError) as caught:
        load_plan_text(text, file)
    return [str(p) for p in caught.value.problems]


def only_problem(problems: list[Problem], path: str) -> Problem:
    found = [p for p in problems if p.path == path]
    assert len(found) == 1, f"expected one problem at {path}, got: {[str(p) for p in problems]}"
    return found[0]


# ---- generated and rendered files of the repo ------------------------------------------------------

def generated(path: str) -> Any:
    """One generated YAML file of the repo, without its header comment."""
    return yaml.safe_load((REPO / path).read_text())


def generated_dir(folder: str, prefix: str = "") -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted((REPO / folder).glob(f"{prefix}*.yaml"))
            if p.name != "kustomization.yaml" and p.name != "values.yaml"]


def kustomize_or_skip(root: Path = REPO) -> list[str]:
    """The `kustomize build` command (skips the test without kustomize, nor kubectl)."""
    try:
        return kustomize_build_command(root)
    except ForgeError as exc:
        pytest.skip(f"needs kustomize (run `make setup`): {exc}")


def rendered(cluster: str, component: str) -> list[dict[str, Any]]:
    """`kustomize build` of one overlay, as Argo CD would build it (skips without kustomize)."""
    proc = subprocess.run([*kustomize_or_skip(), str(REPO / "overlays" / cluster / component)],
                          capture_output=True, text=True, check=True)
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


# ---- upstream chart data (FORGE_UPSTREAM) ----------------------------------------------------------

def upstream_data(name: str) -> Path:
    """A folder of FORGE_UPSTREAM by name; set but lacking it fails."""
    path = Path(UPSTREAM or "") / name
    if not path.is_dir():
        pytest.fail(f"FORGE_UPSTREAM={UPSTREAM} has no {name}/")
    return path


def chart_data(upstream: Path, key: str) -> Path:
    """The upstream data folder of a pinned chart; FORGE_UPSTREAM set but lacking it fails."""
    folder = upstream / chart_pins(REPO)[key].data_dir_name
    assert folder.is_dir(), f"FORGE_UPSTREAM has no {folder.name}/ for the pinned {key} chart"
    return folder


# ---- fixture inventories (tests/fixtures/clusters: never under clusters/, so never synced) ---------

FIXTURE_CLUSTERS = REPO / "tests" / "fixtures" / "clusters"


def fixture_file(cluster: str) -> Path:
    return FIXTURE_CLUSTERS / cluster / "inventory.yaml"


def fixture_model(cluster: str) -> ClusterModel:
    return load_plan_text(fixture_file(cluster).read_text(), inventory_file(cluster)).cluster


def add_fixture_cluster(root: Path, cluster: str) -> Path:
    """Put a fixture inventory at clusters/<cluster>/ of a throwaway repo (see copy_repo_inputs)."""
    target = root / inventory_file(cluster)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(fixture_file(cluster), target)
    return target


# ---- throwaway repos -------------------------------------------------------------------------------

def copy_repo_inputs(dest: Path, inventories: Path | None = None) -> Path:
    """The hand-written inputs of generation (inventories, bases, chart pins) in a fresh folder.
    `inventories`: a folder of `<cluster>/inventory.yaml` to use instead of the shipped fleets."""
    source = REPO / "clusters" if inventories is None else inventories
    for inventory in sorted(source.glob("*/inventory.yaml")):
        target = dest / "clusters" / inventory.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(inventory, target)
    if inventories is None:  # the rings the shipped inventories name (docs/rollout.md)
        shutil.copy(REPO / "clusters" / "rings.yaml", dest / "clusters" / "rings.yaml")
    shutil.copytree(REPO / "base", dest / "base")
    shutil.copytree(REPO / "charts", dest / "charts")
    return dest


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=forge-tests", "-c", "user.email=tests@forge.invalid",
                           "-c", "commit.gpgsign=false", *args], check=True, capture_output=True, text=True).stdout


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def regenerate(repo: Path) -> None:
    write_tree(repo, build_tree(repo))


def git_repo_copy(dest: Path) -> Path:
    """This repo's files (tracked and untracked, not ignored) in a new git repo, generated, committed once."""
    listing = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True, text=True).stdout
    for rel in filter(None, listing.split("\0")):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git(dest.parent, "init", "-q", "-b", "main", str(dest))
    regenerate(dest)
    commit(dest, "base")
    return dest


# ---- the forge CLI, in-process ---------------------------------------------------------------------

def cli(*args: str) -> Result:
    """Run the forge CLI in-process; returns click's Result (exit_code, stdout, stderr)."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def forge(root: Path, *args: str) -> Result:
    """`forge <args> --root <root>`, in-process."""
    return cli(*args, "--root", str(root))
