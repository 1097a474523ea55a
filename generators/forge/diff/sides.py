"""The two sides of a diff, rendering only the clusters whose render inputs differ.

A cluster's render inputs are its generated files (overlays/<c>/, clusters/<c>/argocd/) and
base/, all named by git blob id: the base side's from `git ls-tree` (nothing checked out), the
working tree's from the incremental generate (forge.generate.incremental: a cluster whose generate key and
files are as the last `forge generate` left them is read from disk, the others are built in
memory, nothing is written to the tree). kustomize is the same on both sides, so clusters whose
inputs are equal render equally and are skipped: neither rendered nor parsed. The others are
materialized in a temporary folder (the base's files by `git archive`) and rendered there through
forge.render.overlays, whose content store (.cache/forge/render/) serves every overlay rendered before; it
is written to only when it already exists (nothing new appears in the user's tree).
"""
from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path

import yaml

from forge.generate.cache import CACHE_DIR, State, digest
from forge.diff.objects import LOADER, parse_objects
from forge.diff.revisions import Side, git, resolve
from forge.errors import ForgeError
from forge.fleet import inventory_paths, load_plan, load_plan_text
from forge.fleet.selection import check_clusters
from forge.fleet.links import Neighbours
from forge.generate.incremental import _check_fleet, _fresh, build_clusters, cluster_folders, cluster_keys, fleet_claims
from forge.files.paths import BASE_DIR, CLUSTERS_DIR, OVERLAYS_DIR
from forge.render.overlays import render_all
from forge.facts.versions import VERSIONS_FILE


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def working_blobs(root: Path, folders: tuple[str, ...]) -> dict[str, str]:
    """Blob ids of every file under `folders` in the working tree. git's index already names the
    tracked files by blob id and knows (by its stat data) which may differ from it: only those,
    and files git does not track, are read. A fresh clone reads nothing."""
    def listing(*args: str) -> list[str]:
        return [p for p in git(root, *args, "--", *folders).split("\0") if p]

    out = {}
    for entry in listing("ls-files", "--stage", "-z"):
        meta, _, path = entry.partition("\t")
        out[path] = meta.split()[1]
    for path in {*listing("diff-files", "--name-only", "--relative", "-z"), *listing("ls-files", "--others", "-z")}:
        try:
            out[path] = blob_id((root / path).read_bytes())
        except FileNotFoundError:
            out.pop(path, None)  # deleted from the working tree
        except OSError as exc:
            raise ForgeError(f"{path}: cannot be read ({exc.strerror})") from None
    return out


def base_blobs(root: Path, commit: str) -> dict[str, str]:
    listing = git(root, "ls-tree", "-r", "-z", commit, "--", OVERLAYS_DIR, CLUSTERS_DIR, BASE_DIR)
    out = {}
    for entry in filter(None, listing.split("\0")):
        meta, _, path = entry.partition("\t")
        out[path] = meta.split()[2]
    return out


def _disk_files(root: Path, folder: str) -> dict[str, bytes]:
    out = {}
    for dirpath, _, names in os.walk(root / folder):
        for name in names:
            path = Path(dirpath, name)
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def head_files(root: Path, only: tuple[str, ...] = ()) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]], list[str]]:
    """(blob ids per cluster, the texts of the clusters built in memory, stale-file lines).
    `only`: only these clusters are built (the others' claims still meet the fleet-wide rules)."""
    entries = State(root, "generate").load().get("clusters", {})
    paths = inventory_paths(root)
    keys = cluster_keys(root, paths)
    stale = [p for p in paths if not _fresh(root, entries.get(p.parent.name), keys[p.parent.name])]
    left = [p for p in stale if only and p.parent.name not in only]
    stale = [p for p in stale if p not in left]
    results = build_clusters(root, stale, os.cpu_count() or 1, None)
    names, problem = fleet_claims(root, entries, keys, results, left)
    _check_fleet(problem, names, root)
    built = {name: files for name, files, _, _ in results}
    blobs: dict[str, dict[str, str]] = {}
    lines: list[str] = []
    working = _by_cluster(working_blobs(root, (OVERLAYS_DIR, CLUSTERS_DIR)))
    for name in keys:
        on_disk = working.get(name, {})
        if name not in built:
            blobs[name] = on_disk
            continue
        blobs[name] = {rel: blob_id(text.encode()) for rel, text in built[name].items()}
        lines += [f"{rel} (changed)" for rel, blob in blobs[name].items() if rel in on_disk and on_disk[rel] != blob]
        lines += [f"{rel} (missing)" for rel in blobs[name] if rel not in on_disk]
        lines += [f"{rel} (stale: the inventory no longer produces it)" for rel in on_disk if rel not in blobs[name]]
    return blobs, built, sorted(lines)


def _by_cluster(blobs: dict[str, str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for rel, blob in blobs.items():
        parts = rel.split("/")
        if parts[0] == OVERLAYS_DIR and len(parts) > 2 or parts[0] == CLUSTERS_DIR and len(parts) > 3 and parts[2] == "argocd":
            out.setdefault(parts[1], {})[rel] = blob
    return out


def _fingerprint(files: dict[str, str], base: dict[str, str]) -> str:
    return digest(*(f"{k}={v}" for k, v in sorted(base.items())), "|", *(f"{k}={v}" for k, v in sorted(files.items())))


def _materialize_base(root: Path, commit: str, clusters: list[str], blobs: dict[str, str], into: Path) -> None:
    wanted = [BASE_DIR] + [f for c in clusters for f in cluster_folders(c) if any(k.startswith(f + "/") for k in blobs)]
    data = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", f"{commit}:./", "--", *wanted],
                          capture_output=True, check=False)
    if data.returncode != 0:
        raise ForgeError(f"git archive {commit[:12]}: {data.stderr.decode(errors='replace').strip()}")
    with tarfile.open(fileobj=io.BytesIO(data.stdout)) as tar:
        tar.extractall(into, filter="data")


def _read_side(side: Side, side_root: Path, out: Path, clusters: set[str]) -> None:
    for path in sorted(out.glob("*/*.yaml")) if out.is_dir() else []:
        cluster, component = path.parent.name, path.stem
        side.objects[(cluster, component)] = parse_objects(path.read_text(encoding="utf-8"), f"{side.label}: {cluster}/{component}")
    for path in sorted((side_root / OVERLAYS_DIR).glob("*/*/values.yaml")):
        if path.parent.parent.name not in clusters:
            continue
        try:
            side.values[(path.parent.parent.name, path.parent.name)] = yaml.load(path.read_text(encoding="utf-8"), Loader=LOADER) or {}
        except yaml.YAMLError as exc:
            raise ForgeError(f"{side.label}: {path.relative_to(side_root).as_posix()} is not YAML: {exc}") from None


def _render(side: Side, side_root: Path, out: Path, store: Path, keep: bool, clusters: set[str]) -> None:
    if any((side_root / OVERLAYS_DIR).glob("*/*")) or any((side_root / CLUSTERS_DIR).glob("*/argocd")):
        try:
            render_all(side_root, out=out, store=store, keep=keep)
        except ForgeError as exc:
            raise ForgeError(f"rendering {side.label}: {exc}") from None
    _read_side(side, side_root, out, clusters)


def _chart_versions(text: str) -> dict[str, dict[str, str]]:
    try:
        charts = (yaml.safe_load(text) or {}).get("charts") or {}
        return {str(k): {kk: str(vv) for kk, vv in v.items()} for k, v in charts.items() if isinstance(v, dict)}
    except (yaml.YAMLError, AttributeError):
        return {}


def _in_commit(root: Path, commit: str, clusters: set[str]) -> Neighbours:
    """The commit's inventories, as a link (a burst cluster) reads them."""
    def read(name: str) -> tuple[str, str] | None:
        rel = f"{CLUSTERS_DIR}/{name}/inventory.yaml"
        try:
            return git(root, "show", f"{commit}:./{rel}"), rel
        except ForgeError:
            return None
    return Neighbours(read, lambda: sorted(clusters))


def _models(root: Path, commit: str | None, clusters: set[str]) -> dict:
    out = {}
    for name in sorted(clusters):
        rel = f"{CLUSTERS_DIR}/{name}/inventory.yaml"
        try:
            if commit is None:
                plan = load_plan(root / rel, rel, folder=name)
            else:
                plan = load_plan_text(git(root, "show", f"{commit}:./{rel}"), rel, folder=name, neighbours=_in_commit(root, commit, clusters))
        except ForgeError:
            continue  # an inventory this code no longer reads (or none): counts come from the other side
        out[name] = plan.cluster
    return out


def render_changed(root: Path, ref: str, tmp: Path, only: tuple[str, ...] = ()) -> tuple[Side, Side]:
    """(base, working tree) with only the clusters whose render inputs differ rendered (`only`:
    of these clusters, which either side must have)."""
    root = root.resolve()
    commit = resolve(root, ref)
    base_all = base_blobs(root, commit)
    check_clusters(only, set(_by_cluster(base_all)) | {p.parent.name for p in inventory_paths(root)})
    head_by, built, stale_lines = head_files(root, only)
    head_base = working_blobs(root, (BASE_DIR,))
    base_base = {k: v for k, v in base_all.items() if k.startswith(BASE_DIR + "/")}
    base_by = _by_cluster(base_all)
    changed = {c for c in set(base_by) | set(head_by)
               if c not in base_by or c not in head_by or _fingerprint(base_by[c], base_base) != _fingerprint(head_by[c], head_base)}
    if only:
        changed &= set(only)
        base_by, head_by = ({c: v for c, v in by.items() if c in only} for by in (base_by, head_by))
    base, head = Side(f"{ref} ({commit[:12]})"), Side("working tree", stale=stale_lines)
    base.names, head.names = set(base_by), set(head_by)
    store = root / CACHE_DIR / "render"
    keep = store.parent.is_dir()
    base_root, head_root = tmp / "base", tmp / "head"
    base_root.mkdir()
    _materialize_base(root, commit, sorted(changed & set(base_by)), base_all, base_root)
    _write_head(root, head_root, {c for c in changed if c in head_by}, built)
    _render(base, base_root, tmp / "rendered-base", store, keep, changed)
    _render(head, head_root, tmp / "rendered-head", store, keep, changed)
    base.chart_versions = _chart_versions(git(root, "show", f"{commit}:./{VERSIONS_FILE}"))
    head.chart_versions = _chart_versions((root / VERSIONS_FILE).read_text(encoding="utf-8"))
    base.clusters, head.clusters = _models(root, commit, changed & set(base_by)), _models(root, None, changed & set(head_by))
    return base, head


def _write_head(root: Path, head_root: Path, clusters: set[str], built: dict[str, dict[str, str]]) -> None:
    for rel, data in _disk_files(root, BASE_DIR).items():
        _put(head_root / rel, data)
    for name in clusters:
        if name in built:
            for rel, text in built[name].items():
                _put(head_root / rel, text.encode())
        else:
            for folder in cluster_folders(name):
                for rel, data in _disk_files(root, folder).items():
                    _put(head_root / rel, data)


def _put(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
