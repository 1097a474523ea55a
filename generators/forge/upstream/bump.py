"""`forge charts bump KEY VERSION --chart PATH`: a chart bump, end to end (docs/chart-bump.md).

From the new chart (a folder or a `helm pull`ed .tgz: forge does not download it), write its
reference data in the upstream folder's layout, `<upstream>/<chart>-<version>/`: `values.yaml`,
`values.schema.json` when the chart has one, `crds/<name>.yaml` (one CRD per file, from the
chart's crds/ folder) and `subcharts/<name>/values.yaml`; then set the version in
charts/versions.yaml (and the tag of every image marked `chart: KEY` that carries the old version),
and say what changed in the chart's own defaults and CRDs against the old version's data.
Templated CRDs (under templates/) are not rendered: the how-to says how to add them.
"""
from __future__ import annotations

import io
import re
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import yaml

from forge.errors import ForgeError
from forge.versions import VERSIONS_FILE, chart_pins


def _chart_files(chart: Path) -> dict[str, bytes]:
    """Relative path (under the chart's own folder) -> bytes, from a folder or a .tgz."""
    if chart.is_dir():
        return {p.relative_to(chart).as_posix(): p.read_bytes() for p in chart.rglob("*") if p.is_file()}
    try:
        with tarfile.open(chart) as tar:
            out = {}
            for member in tar.getmembers():
                if member.isfile() and "/" in member.name and ".." not in member.name.split("/"):
                    out[member.name.split("/", 1)[1]] = tar.extractfile(member).read()
            return out
    except (OSError, tarfile.TarError) as exc:
        raise ForgeError(f"--chart {chart}: not a chart folder or .tgz ({exc})") from None


def _load(data: bytes, where: str) -> Any:
    try:
        return yaml.safe_load(io.BytesIO(data))
    except yaml.YAMLError as exc:
        raise ForgeError(f"{where}: not YAML ({exc})") from None


def reference_data(files: dict[str, bytes], chart: Path, name: str, version: str) -> dict[str, bytes]:
    meta = _load(files.get("Chart.yaml", b""), f"{chart}/Chart.yaml") or {}
    if meta.get("name") != name or str(meta.get("version")) != version:
        raise ForgeError(f"--chart {chart}: Chart.yaml says {meta.get('name')} {meta.get('version')}, "
                         f"expected chart {name} version {version}: pull that version (`helm pull REPO/{name} --version {version}`)")
    out = {"values.yaml": files.get("values.yaml", b"{}\n")}
    if "values.schema.json" in files:
        out["values.schema.json"] = files["values.schema.json"]
    for rel, data in sorted(files.items()):
        if rel.startswith("crds/") and rel.endswith((".yaml", ".yml")):
            for doc in yaml.safe_load_all(io.BytesIO(data)):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    out[f"crds/{doc['metadata']['name']}.yaml"] = yaml.safe_dump(doc, sort_keys=False).encode()
        parts = rel.split("/")
        if len(parts) == 3 and parts[0] == "charts" and parts[2] == "values.yaml":
            out[f"subcharts/{parts[1]}/values.yaml"] = data
    return out


def _leaves(data: Any, at: str = "") -> dict[str, Any]:
    if isinstance(data, dict) and data:
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_leaves(value, f"{at}.{key}" if at else str(key)))
        return out
    return {at: data}


def changes(old: Path | None, new: dict[str, bytes]) -> list[str]:
    """What changed in the chart's defaults and CRDs, one line each."""
    if old is None or not old.is_dir():
        return ["no reference data of the old version to compare with"]
    lines = []
    before, after = _leaves(yaml.safe_load((old / "values.yaml").read_text(encoding="utf-8")) or {}), \
        _leaves(yaml.safe_load(new["values.yaml"]) or {})
    for key in sorted(set(before) | set(after)):
        if key not in before:
            lines.append(f"default added: {key} = {after[key]!r}")
        elif key not in after:
            lines.append(f"default removed: {key} (was {before[key]!r})")
        elif before[key] != after[key]:
            lines.append(f"default changed: {key}: {before[key]!r} -> {after[key]!r}")
    old_crds = {p.name: p.read_bytes() for p in (old / "crds").glob("*.yaml")} if (old / "crds").is_dir() else {}
    new_crds = {k.split("/", 1)[1]: v for k, v in new.items() if k.startswith("crds/")}
    for name in sorted(set(old_crds) | set(new_crds)):
        if name not in old_crds:
            lines.append(f"CRD added: {name.removesuffix('.yaml')}")
        elif name not in new_crds:
            lines.append(f"CRD removed: {name.removesuffix('.yaml')}")
        elif yaml.safe_load(old_crds[name]) != yaml.safe_load(new_crds[name]):
            versions = [v.get("name") for v in (yaml.safe_load(new_crds[name]).get("spec") or {}).get("versions", [])]
            lines.append(f"CRD changed: {name.removesuffix('.yaml')} (versions now: {', '.join(map(str, versions))})")
    return lines or ["the chart's defaults and CRDs are unchanged"]


def bump_versions_text(text: str, key: str, old: str, new: str) -> str:
    """charts/versions.yaml with the pin's version and its `chart: KEY` images' tags bumped, as text
    (comments stay)."""
    block = re.search(rf"(?m)^charts:\n(?:.*\n)*?  {re.escape(key)}:\n((?:    .*\n|\s*#.*\n)*)", text)
    if not block or f"version: {old}" not in block.group(1):
        raise ForgeError(f"{VERSIONS_FILE}: no `version: {old}` under charts.{key}: bump it by hand")
    start = block.start(1)
    body = block.group(1).replace(f"version: {old}", f"version: {new}", 1)
    text = text[:start] + body + text[block.end(1):]
    bare_old, bare_new = old.lstrip("v"), new.lstrip("v")

    def image(match: re.Match) -> str:
        return match.group(0).replace(bare_old, bare_new) if f"chart: {key}\n" in match.group(0) else match.group(0)

    return re.sub(r"(?m)^  [A-Za-z0-9_.-]+:\n(?:    .*\n)+", image, text)


def bump(root: Path, key: str, version: str, chart: Path, upstream: Path) -> tuple[Path, list[str]]:
    pins = chart_pins(root)
    if key not in pins:
        raise ForgeError(f"charts bump {key}: no such chart in {VERSIONS_FILE} (charts: {', '.join(sorted(pins))})")
    pin = pins[key]
    if pin.version == version:
        raise ForgeError(f"charts bump {key}: {VERSIONS_FILE} already pins {version}")
    data = reference_data(_chart_files(chart), chart, pin.chart, version)
    target = upstream / f"{pin.chart}-{version}"
    if target.exists():
        raise ForgeError(f"{target}: already exists: remove it to write the reference data again")
    said = changes(upstream / pin.data_dir_name, data)
    versions = root / VERSIONS_FILE
    new_text = bump_versions_text(versions.read_text(encoding="utf-8"), key, pin.version, version)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=upstream))
    try:
        for rel, blob in data.items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_bytes(blob)
        staging.rename(target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ForgeError(f"{target}: cannot write the reference data: {exc.strerror or exc}") from None
    versions.write_text(new_text, encoding="utf-8")
    return target, [f"{VERSIONS_FILE}: charts.{key}.version {pin.version} -> {version}", *said]
