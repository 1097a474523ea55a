"""`forge diff -o json`: the report as one JSON document (kind forge.diff; docs/cli.md has its
shape). A field removed or renamed raises JSON_VERSION; added fields do not. Values go through
objects.redacted / FieldChange.sensitive, as in the text: no Secret value is printed."""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from forge.diff import Report
from forge.diff.objects import MISSING, REDACTED, FieldChange, ObjectChange
from forge.diff.risks import Flag

KIND = "forge.diff"
JSON_VERSION = 1


def _field(f: FieldChange) -> dict[str, Any]:
    op = "added" if f.old is MISSING else "removed" if f.new is MISSING else "changed"
    out: dict[str, Any] = {"path": f.where, "op": op, "sensitive": f.sensitive}
    for key, value in (("old", f.old), ("new", f.new)):
        if value is not MISSING:
            out[key] = REDACTED if f.sensitive else value
    return out


def _object(c: ObjectChange) -> dict[str, Any]:
    ident = c.ident
    out: dict[str, Any] = {"component": c.component, "action": c.action, "object": str(ident),
                           "group": ident.group, "kind": ident.kind, "namespace": ident.namespace, "name": ident.name,
                           "fields": [_field(f) for f in c.fields]}
    if c.action == "added":
        out["new"] = c.printable("new")
    elif c.action == "removed":
        out["old"] = c.printable("old")
    return out


def _risk(f: Flag) -> dict[str, Any]:
    return {"severity": f.level, "cluster": f.cluster, "component": f.component, "kind": f.kind, "reason": f.message}


def _tally(changes: list[ObjectChange]) -> dict[str, int]:
    counts = Counter(c.action for c in changes)
    return {action: counts[action] for action in ("added", "changed", "removed")}


def document(report: Report) -> dict[str, Any]:
    return {
        "kind": KIND, "version": JSON_VERSION, "changed": report.changed,
        "base": {"ref": report.ref, "label": report.base_label}, "head": {"label": report.head_label},
        "stale": list(report.stale),
        # --component / --kind: what was asked for, and what it left out (counted)
        "filters": {"components": report.filters.get("components", []), "kinds": report.filters.get("kinds", []),
                    "hidden_objects": report.hidden_objects, "hidden_risks": report.hidden_risks},
        "totals": _tally(report.changes),
        "risks": [_risk(f) for f in report.flags],
        "reach": [{"ring": ring, "clusters": clusters} for ring, clusters in report.reach],
        "clusters": [{"cluster": name, **_tally(report.for_cluster(name)),
                      "objects": [_object(c) for c in report.for_cluster(name)]} for name in report.clusters],
    }


def dumps(report: Report) -> str:
    # default=str: a YAML timestamp or date in a rendered object prints as its text
    return json.dumps(document(report), indent=2, sort_keys=True, default=str) + "\n"
