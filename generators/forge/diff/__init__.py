"""`forge diff --base <ref>`: what a change does to each fleet, risks first.

revisions.py renders both sides in temporary folders, objects.py compares them object by object,
risks.py flags what a reviewer must not miss, report.py prints text or a PR comment.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from forge.diff.objects import ObjectChange, compare, values_identity
from forge.diff.refusals import refusal_flags
from forge.diff.revisions import Side, resolve
from forge.diff.sides import render_changed
from forge.diff.rings import reach
from forge.diff.risks import Flag, all_flags


@dataclass
class Report:
    ref: str
    base_label: str
    head_label: str
    clusters: list[str]  # every cluster either side has
    changes: list[ObjectChange] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # working tree's generated files out of step
    reach: list[tuple[str, list[str]]] = field(default_factory=list)  # (ring, changed clusters), first reached first
    # --component / --kind (forge.diff.narrow): what they left out, counted
    filters: dict[str, list[str]] = field(default_factory=dict)
    hidden_objects: int = 0
    hidden_risks: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    def for_cluster(self, cluster: str) -> list[ObjectChange]:
        return [c for c in self.changes if c.cluster == cluster]


def compare_sides(ref: str, base: Side, head: Side) -> Report:
    changes: list[ObjectChange] = []
    for key in sorted(set(base.objects) | set(head.objects)):
        changes += compare(*key, base.objects.get(key, {}), head.objects.get(key, {}))
    for cluster, component in sorted(set(base.values) | set(head.values)):
        ident = values_identity(component)
        old = {ident: base.values[(cluster, component)]} if (cluster, component) in base.values else {}
        new = {ident: head.values[(cluster, component)]} if (cluster, component) in head.values else {}
        changes += compare(cluster, component, old, new)
    changes.sort(key=lambda c: c.sort_key)
    clusters = sorted({k[0] for k in (*base.objects, *head.objects)} | base.names | head.names)
    return Report(ref, base.label, head.label, clusters, changes, all_flags(changes, base, head), head.stale)


def diff_against(root: Path, ref: str, only: tuple[str, ...] = (), components: tuple[str, ...] = (),
                 kinds: tuple[str, ...] = ()) -> Report:
    """Only clusters whose render inputs differ are rendered (forge.diff.sides); `only`: of these
    clusters (repo-wide risks, cluster "*", stay). What a real API server refused of the same
    change, where `forge twin upgrade` recorded it, joins the risks. `components`, `kinds`:
    the report narrowed to them (forge.diff.narrow)."""
    from forge.diff.narrow import check_components, check_kinds, known_kinds, narrow

    check_components(components)
    with tempfile.TemporaryDirectory(prefix="forge-diff-") as tmp:
        base, head = render_changed(root, ref, Path(tmp), only)
    check_kinds(kinds, known_kinds((base, head)))
    report = compare_sides(ref, base, head)
    extra = refusal_flags(root, resolve(root, ref), report.clusters)
    report.flags = sorted({f for f in report.flags + extra if not only or f.cluster in (*only, "*")}, key=lambda f: f.sort_key)
    narrow(report, components, kinds)
    report.reach = reach(root, sorted({c.cluster for c in report.changes}))
    return report
