"""The two sides of a diff, rendered without touching the user's tree.

Base: a temporary `git worktree` of the ref, rendered as committed. Its generated files are what
Argo CD syncs today (CI's `forge check` keeps them in step on the target branch); regenerating
them with this checkout's generators would hide the effect of a generator change in the PR.

Working tree: its files (tracked and untracked, not ignored) are copied to a temporary folder,
regenerated there, then rendered. Regenerating means the diff shows what the inventories give
even before `make generate` was run (the usual author flow: edit, diff, generate); when the
committed generated files are out of step, the report says so, because CI's `forge check` would
refuse that commit. Nothing is written under the user's tree: the renders go to temporary
folders, not build/rendered. kustomize is found as `forge render` finds it (forge.tools: the
temporary copies have no tools/bin, so forge's own checkout's is used).
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml

from forge.facts.versions import VERSIONS_FILE
from forge.diff.objects import Identity, parse_objects
from forge.errors import ForgeError
from forge.model.cluster import ClusterModel
from forge.files.paths import OVERLAYS_DIR
from forge.render.overlays import render_all


@dataclass
class Side:
    label: str
    # (cluster, component) -> rendered objects; component "argocd" is the cluster's bootstrap
    objects: dict[tuple[str, str], dict[Identity, dict[str, Any]]] = field(default_factory=dict)
    # (cluster, component) -> parsed overlays/<cluster>/<component>/values.yaml
    values: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    chart_versions: dict[str, dict[str, str]] = field(default_factory=dict)
    clusters: dict[str, ClusterModel] = field(default_factory=dict)  # for node counts; may be empty
    stale: list[str] = field(default_factory=list)  # generated files not in step with the inventories
    names: set[str] = field(default_factory=set)  # every cluster this side has, rendered or not


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, encoding="utf-8")
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        raise ForgeError(f"git {' '.join(args)}: {detail}")
    return proc.stdout


def resolve(root: Path, ref: str) -> str:
    try:
        return git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}").strip()
    except ForgeError:
        raise ForgeError(f"--base {ref}: not a commit in {root} (fetch it first, e.g. `git fetch origin {ref.split('/', 1)[-1]}`)") from None


@contextmanager
def base_worktree(root: Path, commit: str, into: Path) -> Iterator[Path]:
    """A detached worktree of `commit`; yields the forge root inside it. Always removed after."""
    prefix = git(root, "rev-parse", "--show-prefix").strip()  # forge may sit in a subfolder
    checkout = into / "base"
    git(root, "worktree", "add", "--detach", "--quiet", str(checkout), commit)
    try:
        yield checkout / prefix
    finally:
        try:
            git(root, "worktree", "remove", "--force", str(checkout))
        except ForgeError:
            shutil.rmtree(checkout, ignore_errors=True)
            git(root, "worktree", "prune")


def copy_working_tree(root: Path, into: Path) -> Path:
    """Copy the files git would see (tracked plus untracked, not ignored) as they are on disk."""
    listing = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    dest = into / "head"
    for rel in sorted(set(filter(None, listing.split("\0")))):
        src = root / rel
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree, not yet committed
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            target.symlink_to(src.readlink())
        else:
            shutil.copy2(src, target)
    return dest


def _regenerate(side_root: Path) -> list[str]:
    from forge.generate.tree import build_tree
    from forge.generate.writer import diff_tree, write_tree

    tree = build_tree(side_root)
    stale = diff_tree(side_root, tree)
    write_tree(side_root, tree)
    return stale


def _clusters(side_root: Path) -> dict[str, ClusterModel]:
    from forge.fleet import load_fleet

    try:
        return {c.name: c for c in load_fleet(side_root).clusters}
    except ForgeError:
        return {}  # an older inventory this code no longer reads: node counts come from the other side


def _chart_versions(side_root: Path) -> dict[str, dict[str, str]]:
    path = side_root / VERSIONS_FILE
    try:
        charts = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("charts") or {}
        return {str(k): {kk: str(vv) for kk, vv in v.items()} for k, v in charts.items() if isinstance(v, dict)}
    except (OSError, yaml.YAMLError, AttributeError):
        return {}


def render_side(side_root: Path, label: str, out: Path, regenerate: bool) -> Side:
    side = Side(label)
    if regenerate:
        side.stale = _regenerate(side_root)
    try:
        render_all(side_root, out=out)
    except ForgeError as exc:
        raise ForgeError(f"rendering {label}: {exc}") from None
    for path in sorted(out.glob("*/*.yaml")):
        cluster, component = path.parent.name, path.stem
        side.objects[(cluster, component)] = parse_objects(path.read_text(encoding="utf-8"), f"{label}: {cluster}/{component}")
    for path in sorted((side_root / OVERLAYS_DIR).glob("*/*/values.yaml")):
        where = path.relative_to(side_root).as_posix()
        try:
            side.values[(path.parent.parent.name, path.parent.name)] = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ForgeError(f"{label}: {where} is not YAML: {exc}") from None
    side.chart_versions = _chart_versions(side_root)
    side.clusters = _clusters(side_root)
    return side


def render_both(root: Path, ref: str) -> tuple[Side, Side]:
    """(base, working tree), every cluster rendered (a worktree of the base, a copy of the tree).
    `forge diff` renders only the clusters whose inputs differ (forge.diff.sides); this whole
    rendering is the reference a test compares it with."""
    root = root.resolve()
    commit = resolve(root, ref)
    short = commit[:12]
    with tempfile.TemporaryDirectory(prefix="forge-diff-") as tmp:
        tmp_path = Path(tmp)
        with base_worktree(root, commit, tmp_path) as base_root:
            base = render_side(base_root, f"{ref} ({short})", tmp_path / "rendered-base", regenerate=False)
        head_root = copy_working_tree(root, tmp_path)
        head = render_side(head_root, "working tree", tmp_path / "rendered-head", regenerate=True)
    return base, head
