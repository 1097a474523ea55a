"""`forge diff --component NAME --kind KIND`: the report narrowed to some components and object
kinds. What is left out is counted (Report.hidden_objects, hidden_risks), never dropped silently.

Components are forge's (forge.components.COMPONENTS) and `argocd`, a cluster's bootstrap; a
name that is neither is refused before anything renders. Kinds are the objects' `kind` (and
HelmValues, a component's values file): a kind neither side renders nor any component declares
is refused once both sides are read. --component narrows the risks too (a risk about several
components stays when one is named; repository-wide ones, cluster `*`, always stay); --kind
narrows only the objects.
"""
from __future__ import annotations

import difflib

from forge.components import COMPONENTS
from forge.diff import Report
from forge.diff.objects import VALUES_KIND
from forge.errors import ForgeError
from forge.render.overlays import BOOTSTRAP


def component_names() -> list[str]:
    return sorted({c.name for c in COMPONENTS} | {BOOTSTRAP})


def _refuse(option: str, unknown: list[str], known: list[str], what: str) -> None:
    near = [m for u in unknown for m in difflib.get_close_matches(u, known, n=1)]
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    raise ForgeError(f"{option} {', '.join(unknown)}: no such {what}{hint} ({what}s: {', '.join(known)})")


def check_components(components: tuple[str, ...]) -> None:
    known = component_names()
    unknown = [c for c in dict.fromkeys(components) if c not in known]
    if unknown:
        _refuse("--component", unknown, known, "component")


def known_kinds(sides) -> list[str]:
    declared = {k for c in COMPONENTS for _, k in (*c.namespaced_kinds, *c.cluster_kinds)}
    rendered = {ident.kind for side in sides for objects in side.objects.values() for ident in objects}
    return sorted(declared | rendered | {VALUES_KIND})


def check_kinds(kinds: tuple[str, ...], known: list[str]) -> None:
    unknown = [k for k in dict.fromkeys(kinds) if k not in known]
    if unknown:
        _refuse("--kind", unknown, known, "kind")


def narrow(report: Report, components: tuple[str, ...], kinds: tuple[str, ...]) -> Report:
    if not components and not kinds:
        return report
    keep = [c for c in report.changes if (not components or c.component in components) and (not kinds or c.ident.kind in kinds)]
    flags = [f for f in report.flags if not components or f.cluster == "*" or set(f.component.split("+")) & set(components)]
    report.hidden_objects += len(report.changes) - len(keep)
    report.hidden_risks += len(report.flags) - len(flags)
    report.changes, report.flags = keep, flags
    report.filters = {"components": sorted(set(components)), "kinds": sorted(set(kinds))}
    return report
