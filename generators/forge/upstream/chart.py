"""Read a Helm chart as Helm loads it: from a folder or a .tgz, with its subcharts (folders or
archives under charts/), their aliases and conditions. Read-only: nothing is rendered here.

Used by the values checks (which keys the templates read, what the defaults are) and by the cache
(to check a chart's name and version before it goes in).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from forge.files import datafile, textguard
from forge.errors import ForgeError
from forge.upstream import members

# Files Helm never renders into manifests: a values key read only here reaches no cluster.
_NOT_RENDERED = {"NOTES.txt"}


@dataclass
class Dependency:
    name: str
    alias: str | None
    condition: str | None  # comma-separated values paths; the first that is a bool decides
    tags: tuple[str, ...]

    @property
    def key(self) -> str:
        """The key the parent's values address this subchart by."""
        return self.alias or self.name


@dataclass
class Chart:
    name: str
    version: str
    type: str  # "application" or "library"
    values: dict[str, Any]  # the chart's own defaults (values.yaml)
    templates: dict[str, str]  # path inside the chart -> text, for every file Helm renders
    crds: dict[str, str]  # crds/ files (never templated)
    dependencies: list[Dependency]
    subcharts: dict[str, "Chart"] = field(default_factory=dict)  # values key (alias or name) -> chart

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


def _files_from_dir(root: Path) -> dict[str, bytes]:
    return members.from_folder(root)


def _files_from_tgz(data: bytes, origin: str) -> dict[str, bytes]:
    """Files of a chart archive, relative to its single top folder (forge.upstream.members' guards)."""
    return members.under_top(members.from_archive(data, origin), origin)


def _yaml(text: bytes, origin: str) -> Any:
    return datafile.parse(members.yaml_text(text, origin), origin, textguard.MAX_SCHEMA_DEPTH)[0] or {}


def chart_meta(files: dict[str, bytes], origin: str) -> dict[str, Any]:
    if "Chart.yaml" not in files:
        raise ForgeError(f"{origin}: no Chart.yaml: not a Helm chart")
    meta = _yaml(files["Chart.yaml"], f"{origin}/Chart.yaml")
    if not isinstance(meta, dict) or not meta.get("name") or meta.get("version") is None:
        raise ForgeError(f"{origin}/Chart.yaml: name and version are required")
    return meta


def _build(files: dict[str, bytes], origin: str) -> Chart:
    meta = chart_meta(files, origin)
    values = _yaml(files["values.yaml"], f"{origin}/values.yaml") if "values.yaml" in files else {}
    deps = [
        Dependency(str(d["name"]), d.get("alias"), d.get("condition"), tuple(d.get("tags") or ()))
        for d in meta.get("dependencies") or [] if isinstance(d, dict) and d.get("name")
    ]
    # Helm 2 style requirements.yaml (apiVersion v1 charts) lists dependencies there.
    if "requirements.yaml" in files and not deps:
        req = _yaml(files["requirements.yaml"], f"{origin}/requirements.yaml")
        deps = [Dependency(str(d["name"]), d.get("alias"), d.get("condition"), tuple(d.get("tags") or ()))
                for d in (req.get("dependencies") or []) if isinstance(d, dict) and d.get("name")]
    templates = {
        n: b.decode("utf-8", "replace") for n, b in files.items()
        if n.startswith("templates/") and PurePosixPath(n).name not in _NOT_RENDERED
    }
    crds = {n: b.decode("utf-8", "replace") for n, b in files.items() if n.startswith("crds/")}
    chart = Chart(str(meta["name"]), str(meta["version"]), str(meta.get("type") or "application"),
                  values if isinstance(values, dict) else {}, templates, crds, deps)

    # Subcharts: charts/<x>/ folders and charts/<x>.tgz archives, matched to dependencies by name.
    found: dict[str, Chart] = {}
    folders = {PurePosixPath(n).parts[1] for n in files if n.startswith("charts/") and len(PurePosixPath(n).parts) > 2}
    for folder in sorted(folders):
        prefix = f"charts/{folder}/"
        sub = {n[len(prefix):]: b for n, b in files.items() if n.startswith(prefix)}
        if "Chart.yaml" in sub:
            loaded = _build(sub, f"{origin}/{prefix.rstrip('/')}")
            found.setdefault(loaded.name, loaded)
    for name in sorted(n for n in files if n.startswith("charts/") and n.endswith((".tgz", ".tar.gz")) and n.count("/") == 1):
        loaded = _build(_files_from_tgz(files[name], f"{origin}/{name}"), f"{origin}/{name}")
        found.setdefault(loaded.name, loaded)
    for dep in deps:
        if dep.name in found:
            chart.subcharts[dep.key] = found[dep.name]
    # Subcharts vendored without a dependency entry are loaded by Helm under their own name.
    listed = {d.name for d in deps}
    for name, sub_chart in found.items():
        if name not in listed:
            chart.subcharts.setdefault(name, sub_chart)
    return chart


def load_chart(path: Path) -> Chart:
    """A chart from a folder (holding Chart.yaml) or a .tgz archive."""
    path = Path(path)
    if path.is_dir():
        return _build(_files_from_dir(path), str(path))
    return _build(_files_from_tgz(members.read_archive(path), str(path)), str(path))


def archive_meta(path: Path) -> dict[str, Any]:
    """Chart.yaml of a chart archive, without loading the rest."""
    return chart_meta(_files_from_tgz(members.read_archive(path), str(path)), str(path))
