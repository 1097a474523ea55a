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

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from forge.files import datafile, textguard
from forge.errors import ForgeError
from forge.upstream import members
from forge.facts.versions import VERSIONS_FILE, chart_pins


def _load(data: bytes, where: str) -> Any:
    """One YAML document of a chart file, through forge's guarded reader (no alias bomb, no traceback)."""
    return datafile.parse(_text(data, where), where, textguard.MAX_SCHEMA_DEPTH)[0]


def _text(data: bytes, where: str) -> str:
    return members.yaml_text(data, where)


def _crds(data: bytes, where: str) -> dict[str, bytes]:
    """crds/<name>.yaml for each CRD of one crds/ file, its name checked before a path is built."""
    out = {}
    for doc in datafile.parse_all(_text(data, where), where, textguard.MAX_SCHEMA_DEPTH):
        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
            meta = doc.get("metadata")
            name = members.file_name(meta.get("name") if isinstance(meta, dict) else None, where, "CRD name")
            out[f"crds/{name}.yaml"] = yaml.safe_dump(doc, sort_keys=False).encode()
    return out


def reference_data(files: dict[str, bytes], chart: Path, name: str, version: str) -> dict[str, bytes]:
    meta = _load(files.get("Chart.yaml", b""), f"{chart}/Chart.yaml") or {}
    if not isinstance(meta, dict):
        raise ForgeError(f"{chart}/Chart.yaml: not a mapping (name, version, ...): not a Helm chart")
    if meta.get("name") != name or str(meta.get("version")) != version:
        raise ForgeError(f"--chart {chart}: Chart.yaml says {meta.get('name')} {meta.get('version')}, "
                         f"expected chart {name} version {version}: pull that version (`helm pull REPO/{name} --version {version}`)")
    out = {"values.yaml": files.get("values.yaml", b"{}\n")}
    if not isinstance(_load(out["values.yaml"], f"{chart}/values.yaml") or {}, dict):
        raise ForgeError(f"{chart}/values.yaml: not a mapping: a chart's values are one YAML mapping")
    if "values.schema.json" in files:
        out["values.schema.json"] = members.schema_json(files["values.schema.json"], f"{chart}/values.schema.json")
    for rel, data in sorted(files.items()):
        if rel.startswith("crds/") and rel.endswith((".yaml", ".yml")):
            out.update(_crds(data, f"{chart}/{rel}"))
        parts = rel.split("/")
        if len(parts) == 3 and parts[0] == "charts" and parts[2] == "values.yaml":
            out[f"subcharts/{members.file_name(parts[1], str(chart), 'subchart folder')}/values.yaml"] = data
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
        _leaves(_load(new["values.yaml"], "values.yaml") or {})
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
            spec = yaml.safe_load(new_crds[name]).get("spec")
            versions = [v.get("name") for v in (spec.get("versions") if isinstance(spec, dict) else None) or [] if isinstance(v, dict)]
            lines.append(f"CRD changed: {name.removesuffix('.yaml')} (versions now: {', '.join(map(str, versions))})")
    return lines or ["the chart's defaults and CRDs are unchanged"]


def bump_versions_text(text: str, key: str, old: str, new: str) -> str:
    """charts/versions.yaml with the pin's version and its `chart: KEY` images' tags bumped, as text
    (comments stay). Versions are replaced as whole words, and tags only under `images:` (a chart's
    own entry also says `chart: KEY`: bumping it again wrote `1.7.0-rc.1-rc.1`)."""
    block = re.search(rf"(?m)^charts:\n(?:.*\n)*?  {re.escape(key)}:\n((?:    .*\n|\s*#.*\n)*)", text)
    version = re.compile(rf"(?m)^(    version: ){re.escape(old)}[ \t]*$")
    if not block or not version.search(block.group(1)):
        raise ForgeError(f"{VERSIONS_FILE}: no `version: {old}` under charts.{key}: bump it by hand")
    body = version.sub(lambda m: m.group(1) + new, block.group(1), count=1)
    text = text[:block.start(1)] + body + text[block.end(1):]
    images = re.search(r"(?m)^images:\n", text)
    if images is None:
        return text
    bare = re.compile(rf"(?<![0-9.]){re.escape(old.lstrip('v'))}(?![0-9])(?!\.[0-9])")

    def image(match: re.Match) -> str:
        entry = match.group(0)
        return bare.sub(new.lstrip("v"), entry) if re.search(rf"(?m)^    chart: {re.escape(key)}$", entry) else entry

    after = re.compile(r"(?m)^\S").search(text, images.end())
    end = after.start() if after else len(text)
    section = re.sub(r"(?m)^  [A-Za-z0-9_.-]+:\n(?:    .*\n)+", image, text[images.end():end])
    return text[:images.end()] + section + text[end:]


def bump(root: Path, key: str, version: str, chart: Path, upstream: Path) -> tuple[Path, list[str]]:
    pins = chart_pins(root)
    if key not in pins:
        raise ForgeError(f"charts bump {key}: no such chart in {VERSIONS_FILE} (charts: {', '.join(sorted(pins))})")
    pin = pins[key]
    if pin.version == version:
        raise ForgeError(f"charts bump {key}: {VERSIONS_FILE} already pins {version}")
    data = reference_data(members.chart_files(chart), chart, pin.chart, version)
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
