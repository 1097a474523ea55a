"""Check the Helm values we generate against the chart's own defaults and values.schema.json.

A misspelt or misplaced values key is silently ignored by Helm: the chart renders, just without
our setting. So besides the chart's schema (which few charts ship), every key path we set must
exist in the chart's default values.yaml, except where the chart leaves a map free-form.

chart_data_dir holds `values.yaml`, optionally `values.schema.json`, and `subcharts/<name>/`
with the same files for each subchart; our values address a subchart under the key `<name>`.
"""
from __future__ import annotations

import difflib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import jsonschema_rs

from forge.validate._schema import check, dotted
from forge.validate.upstream_data import read_text, yaml_documents

_SHOWN = 8  # sibling keys listed in an "unknown key" reason


@lru_cache(maxsize=64)
def _defaults(path: Path) -> dict[str, Any]:
    """A chart's default values (cached: big charts' values.yaml take ~0.1 s to parse).
    Callers must not mutate the result."""
    if not path.is_file():
        return {}
    docs = yaml_documents(path)
    return docs[0] if docs else {}


@lru_cache(maxsize=64)
def _schema(path: Path) -> jsonschema_rs.Validator | str | None:
    """The compiled values.schema.json, an error text when it cannot be used, or None."""
    if not path.is_file():
        return None
    try:
        return jsonschema_rs.validator_for(json.loads(read_text(path)), offline=True)
    except (ValueError, jsonschema_rs.ReferencingError) as exc:
        return f"{path.name} cannot be compiled: {str(exc).splitlines()[0]}"


class _Chart(NamedTuple):
    """What one chart's data folder says, read once per folder (every cluster asks again)."""
    defaults: dict[str, Any]
    schema: Path
    subcharts: dict[str, tuple[dict[str, Any], Path]]  # name -> (its defaults under the parent's overrides, schema)


@lru_cache(maxsize=64)
def _chart(folder: str) -> _Chart:
    data = Path(folder)
    defaults = _defaults(data / "values.yaml")
    sub_dir = data / "subcharts"
    names = sorted(p.name for p in sub_dir.iterdir() if p.is_dir()) if sub_dir.is_dir() else []
    subcharts = {}
    for name in names:
        parent_over = defaults.get(name) if isinstance(defaults.get(name), dict) else {}
        subcharts[name] = (coalesce(_defaults(sub_dir / name / "values.yaml"), parent_over), sub_dir / name / "values.schema.json")
    return _Chart(defaults, data / "values.schema.json", subcharts)


def coalesce(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Helm's merge of user values over defaults: maps merge, anything else replaces, and a null
    from the user deletes the key. Returns new dicts; neither input is changed."""
    out = dict(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = coalesce(out[key], value)
        else:
            out[key] = value
    return out


def _kind(value: Any) -> str:
    return {dict: "map", list: "list"}.get(type(value), "scalar")


# Keys whose map values are Kubernetes data (label keys and the like), never chart structure.
FREE_FORM_KEYS = frozenset({
    "nodeSelector", "labels", "annotations", "podLabels", "podAnnotations", "commonLabels",
    "additionalLabels", "matchLabels", "extraLabels", "serviceAnnotations", "deploymentAnnotations",
})


class _KeyCheck:
    def __init__(self, declared: frozenset[str], problems: list[tuple[str, str]]) -> None:
        self.declared = declared
        self.problems = problems

    def covered(self, path: str) -> bool:
        """path, or an ancestor of it, is declared by the component: not checked below."""
        return any(path == d or path.startswith(d + ".") for d in self.declared)

    def on_declared_route(self, path: str) -> bool:
        """path leads to a declared path (migManager.config for migManager.config.data)."""
        return any(d.startswith(path + ".") for d in self.declared)

    def walk(self, ours: dict[str, Any], default: dict[str, Any], path: tuple[str, ...], root: bool = False) -> None:
        """Check every key of ours against the defaults at the same place (root: a chart's top)."""
        for key, value in ours.items():
            here = path + (str(key),)
            name = dotted(here)
            if self.covered(name) or (root and key == "global"):
                continue  # declared by the component, or Helm's global values
            if key not in default:
                if self.on_declared_route(name) and isinstance(value, dict):
                    self.walk(value, {}, here)
                else:
                    self.problems.append((name, _unknown(str(key), default)))
                continue
            self.compare(value, default[key], here)

    def compare(self, value: Any, default: Any, here: tuple[str, ...]) -> None:
        if value is None or default is None:
            return  # a null deletes a default; a null default takes anything (free-form)
        if isinstance(value, dict) and isinstance(default, dict):
            # An empty default map is free-form; so are Kubernetes maps whose keys are data
            # (label selectors, labels, annotations) even when the chart ships an example entry.
            if default and here[-1] not in FREE_FORM_KEYS:
                self.walk(value, default, here)
        elif isinstance(value, dict) or (isinstance(default, dict) and default):
            # A map where the chart has a scalar or list (or the reverse): the template would
            # print a Go map, or fail. List vs scalar is left alone: templates often take both.
            self.problems.append((dotted(here), f"chart default is a {_kind(default)}, we set a {_kind(value)}"))


def _unknown(key: str, default: dict[str, Any]) -> str:
    siblings = [str(k) for k in default]
    if not siblings:
        return f"unknown key '{key}' (the chart has no keys here)"
    close = difflib.get_close_matches(key, siblings, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    shown = ", ".join(siblings[:_SHOWN]) + (", ..." if len(siblings) > _SHOWN else "")
    return f"unknown key '{key}' ({hint}chart default has: {shown})"


def check_values(
    values: dict[str, Any], chart_data_dir: Path, declared_paths: frozenset[str] = frozenset()
) -> list[tuple[str, str]]:
    """Problems in our values for one chart, as (dotted key path, reason); [] when clean.

    declared_paths: dotted paths a component may set although the chart's values.yaml does not
    show them (documented only in comments); they and everything below them are accepted.
    """
    chart = _chart(str(chart_data_dir))
    defaults, subcharts = chart.defaults, chart.subcharts
    problems: list[tuple[str, str]] = []
    keys = _KeyCheck(declared_paths, problems)

    # (b) key structure: the parent chart's keys, then each subchart's under its own name, against
    # the subchart's defaults with the parent's overrides for it (what the subchart really gets).
    keys.walk({k: v for k, v in values.items() if k not in subcharts}, defaults, (), root=True)
    sub_values: dict[str, dict[str, Any]] = {}
    for name, (sub_defaults, _) in subcharts.items():
        ours = values.get(name)
        if ours is not None and not isinstance(ours, dict):
            problems.append((name, f"'{name}' is a subchart: its values must be a map"))
            continue
        if ours and not keys.covered(name):
            keys.walk(ours, sub_defaults, (name,), root=True)
        if ours:  # an untouched subchart may be switched off: its own defaults are not our problem
            sub_values[name] = coalesce(sub_defaults, ours)

    # (a) schemas: Helm validates the merged values against the chart's schema, and each enabled
    # subchart's part (with the globals copied in) against the subchart's schema.
    merged = coalesce(defaults, values)
    targets = [("", chart.schema, merged)]
    for name, sub in sub_values.items():
        if isinstance(merged.get("global"), dict):
            sub = {**sub, "global": coalesce(sub.get("global") or {}, merged["global"])}
        targets.append((name, subcharts[name][1], sub))
    for prefix, schema_path, instance in targets:
        validator = _schema(schema_path)
        if isinstance(validator, str):
            problems.append((prefix, validator))
        elif validator is not None:
            for path, msg in check(validator, instance):
                full = f"{prefix}.{path}" if prefix and path else prefix or path
                problems.append((full, f"values.schema.json: {msg}"))
    return problems
