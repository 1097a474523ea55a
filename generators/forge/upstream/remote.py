"""Remote kustomize bases (`Component.remote_base`): upstream manifests at a pinned git tag, which
Argo CD builds with the patches and labels of the Application's source. Cached like the charts,
so `forge hydrate` can build them as Argo CD does, offline.

Cache layout, one folder per (repository, tag), swapped into place whole:

    <chart cache>/kustomize/<repo name>-<tag>/
        tree/           the repository's files at the tag (at least what the base's path needs)
        source.yaml     where they came from

Filled by `forge charts pull` (KEYS: the component's name): with network, a shallow `git clone`
of the tag; air-gapped, `--from <mirror>`: a folder `<repo name>-<tag>/` or
`<component>-<tag>/` holding the repository's files (the base's path with its kustomization.yaml).
A git tag has no digest in charts/lock.yaml: the tag is the pin, and the entry says unverified.

Building (`build_remote`), as Argo CD's kustomize source does: the cached tree is copied to a
scratch folder, the source's `kustomize` options are written into the base's own
kustomization file (`commonLabels` as `kustomize edit add label [--without-selector]` would,
`patches` appended to its `patches`), then `kustomize build <path>`.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from forge.components.base import RemoteBase
from forge.errors import ForgeError
from forge.files.folders import swap_in

KUSTOMIZE_CACHE = "kustomize"
TREE = "tree"
SOURCE_FILE = "source.yaml"
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# Argo CD's source.kustomize options this module reproduces; any other one is refused, not ignored.
SUPPORTED_OPTIONS = {"commonLabels", "labelWithoutSelector", "labelIncludeTemplates", "patches"}


@dataclass(frozen=True)
class RemoteKey:
    """A remote base as the cache knows it: repository and tag (path and patches do not matter)."""

    component: str
    repo_url: str
    revision: str
    path: str

    @property
    def repo_name(self) -> str:
        return self.repo_url.rstrip("/").removesuffix(".git").rsplit("/", 1)[-1]

    @property
    def dir_name(self) -> str:
        return f"{self.repo_name}-{self.revision}"

    @classmethod
    def of(cls, component: str, base: RemoteBase) -> "RemoteKey":
        return cls(component, base.repo_url, base.revision, base.path)


def entry_dir(cache: Path, key: RemoteKey) -> Path:
    return cache / KUSTOMIZE_CACHE / key.dir_name


def cached_tree(cache: Path, key: RemoteKey) -> Path | None:
    """The cached repository tree for a key, or None when the cache lacks it (or its path)."""
    tree = entry_dir(cache, key) / TREE
    return tree if _kustomization(tree / key.path) else None


def fetch_hint(key: RemoteKey) -> str:
    return (f"`forge charts pull {key.component}` (without network: `forge charts pull --from <mirror> "
            f"{key.component}`, the mirror holding {key.dir_name}/{key.path}/)")


def _kustomization(folder: Path) -> Path | None:
    return next((folder / n for n in KUSTOMIZATION_NAMES if (folder / n).is_file()), None)


def _in_mirror(mirror: Path, key: RemoteKey) -> Path:
    names = (key.dir_name, f"{key.component}-{key.revision}")
    for name in names:
        if _kustomization(mirror / name / key.path):
            return mirror / name
    raise ForgeError(f"{mirror}: no {key.repo_url} at {key.revision} (looked for "
                     f"{' and '.join(f'{n}/{key.path}/kustomization.yaml' for n in names)})")


def _refuse_unsafe(tree: Path) -> None:
    """A mirror's folder is copied into the cache, and kustomize reads what is copied: every entry
    must be a folder, a regular file or a symbolic link that stays inside the folder (git checkouts
    hold such links). A link leading outside (a kubeconfig, /etc) would be copied in and rendered;
    a FIFO or device would hang the copy or read without end. Refused before anything is copied."""
    top = Path(os.path.realpath(tree))
    for folder, dirs, files in os.walk(tree):
        for name in sorted(dirs + files):
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                real = Path(os.path.realpath(path))
                if real.is_relative_to(top) and real.exists():
                    continue
                leads = "to nothing" if not real.exists() else f"to {real}, outside {tree}"
                problem = f"is a symbolic link {leads}"
            elif stat.S_ISDIR(mode) or stat.S_ISREG(mode):
                continue
            else:
                problem = "is a FIFO, socket or device"
            raise ForgeError(f"{path}: {problem}: a mirrored kustomize base holds folders, regular files and links "
                             "inside its own folder only; copy the file in (nothing was cached)")


def _clone(key: RemoteKey, dest: Path) -> None:
    git = shutil.which("git")
    if not git:
        raise ForgeError(f"{key.component}: no git to clone {key.repo_url} with (without network: forge charts pull --from <mirror>)")
    proc = subprocess.run([git, "-c", "advice.detachedHead=false", "clone", "--quiet", "--depth", "1",
                           "--branch", key.revision, key.repo_url, str(dest)], capture_output=True, text=True, encoding="utf-8")
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        raise ForgeError(f"{key.component}: `git clone` of {key.repo_url} at {key.revision} failed: {detail}"
                         f" (without network: forge charts pull --from <mirror>)")
    shutil.rmtree(dest / ".git", ignore_errors=True)


def pull_remote(cache: Path, key: RemoteKey, mirror: Path | None = None) -> str:
    """Put one remote base in the cache (whole, or not at all); returns a line saying from where."""
    cache.mkdir(parents=True, exist_ok=True)
    parent = cache / KUSTOMIZE_CACHE
    parent.mkdir(exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{key.dir_name}.", dir=parent))
    try:
        if mirror is not None:
            found = _in_mirror(mirror, key)
            _refuse_unsafe(found)
            shutil.copytree(found, staging / TREE, symlinks=False)
            source = str(found)
        else:
            _clone(key, staging / TREE)
            source = key.repo_url
        if not _kustomization(staging / TREE / key.path):
            raise ForgeError(f"{key.component}: {source} at {key.revision} has no kustomization in {key.path}/")
        record = {"repo": key.repo_url, "revision": key.revision, "source": source, "verified": False}
        (staging / SOURCE_FILE).write_text(yaml.safe_dump(record, sort_keys=False))
        final = entry_dir(cache, key)
        swap_in(staging, final)
        return (f"{key.component}: {key.repo_url} {key.revision} ({key.path}) from {source} "
                f"(UNVERIFIED: a git tag has no digest to check)")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def apply_argocd_options(kustomization: dict[str, Any], options: dict[str, Any], where: str) -> dict[str, Any]:
    """The base's kustomization as Argo CD leaves it before `kustomize build`."""
    unknown = sorted(set(options) - SUPPORTED_OPTIONS)
    if unknown:
        raise ForgeError(f"{where}: Argo CD kustomize option(s) {', '.join(unknown)} are not reproduced by forge hydrate")
    out = dict(kustomization)
    labels = options.get("commonLabels") or {}
    if labels:
        if options.get("labelWithoutSelector"):
            entry: dict[str, Any] = {"pairs": dict(labels)}  # `edit add label --without-selector`
            if options.get("labelIncludeTemplates"):
                entry["includeTemplates"] = True
            out["labels"] = [*(out.get("labels") or []), entry]
        else:
            out["commonLabels"] = {**(out.get("commonLabels") or {}), **labels}
    if options.get("patches"):
        out["patches"] = [*(out.get("patches") or []), *options["patches"]]
    return out


def build_remote(tree: Path, source: dict[str, Any], kustomize: list[str], where: str) -> str:
    """`kustomize build` of the Argo CD source `source` (repoURL, path, kustomize options) from a
    cached tree, in a scratch copy (the cache is never edited)."""
    with tempfile.TemporaryDirectory(prefix="forge-remote-") as scratch:
        work = Path(scratch) / "tree"
        shutil.copytree(tree, work, symlinks=False)
        target = work / source["path"]
        file = _kustomization(target)
        if file is None:
            raise ForgeError(f"{where}: no kustomization in {source['path']}/ of {source['repoURL']}")
        data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
        data = apply_argocd_options(data, source.get("kustomize") or {}, where)
        file.write_text(yaml.safe_dump(data, sort_keys=False))
        proc = subprocess.run([*kustomize, str(target)], capture_output=True, text=True, encoding="utf-8")
        if proc.returncode != 0:
            tail = " | ".join(proc.stderr.strip().splitlines()[-5:]) or f"exit {proc.returncode}"
            raise ForgeError(f"{where}: kustomize build of {source['repoURL']} {source['path']} at "
                             f"{source['targetRevision']} with the Application's patches failed: {tail}; nothing was hydrated")
        return proc.stdout
