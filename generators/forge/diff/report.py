"""Print a diff report as terminal text or as a pull-request comment (markdown).

Both put the risk flags first. The markdown is a summary table (cluster x component -> added,
changed, removed) and one collapsible block per object, capped per object and in total so the
comment stays under GitHub's 65,536-character limit; what is cut is counted, never dropped
silently. Values go through objects.redacted / FieldChange.sensitive: no Secret value is printed.
"""
from __future__ import annotations

import difflib
from collections import Counter
from typing import Any

import click
import yaml

from forge.diff import Report
from forge.diff.objects import MISSING, REDACTED, FieldChange, ObjectChange
from forge.diff.rings import reach_line

COMMENT_MARKER = "<!-- forge-diff -->"  # CI finds (and updates) its previous comment by it
MAX_OBJECT_LINES = 40  # lines of one object's diff in the PR comment
MAX_COMMENT_CHARS = 60_000  # GitHub refuses comments over 65,536 characters
MAX_INLINE = 80  # a value longer than this goes on its own line
LEVEL_TAG = {"high": "HIGH", "medium": "MEDIUM", "low": "low"}
ACTION_SIGN = {"added": "+", "removed": "-", "changed": "~"}


def flow(value: Any) -> str:
    """One value as compact YAML (flow style), the way it would read in the file."""
    if value is MISSING:
        return "(absent)"
    return _strip_end(yaml.safe_dump(value, default_flow_style=True, width=1_000_000, sort_keys=False, allow_unicode=True))


def _strip_end(text: str) -> str:
    """PyYAML ends a lone scalar with a document-end marker; drop it."""
    text = text.rstrip("\n")
    return text[:-4].rstrip("\n") if text.endswith("\n...") else text


def block(value: Any) -> list[str]:
    return _strip_end(yaml.safe_dump(value, default_flow_style=False, width=120, sort_keys=False, allow_unicode=True)).splitlines()


def _multiline(f: FieldChange) -> bool:
    return any(isinstance(v, str) and "\n" in v for v in (f.old, f.new))


def field_diff_lines(f: FieldChange) -> list[str]:
    """`- old` / `+ new` lines for one field (a unified diff for multi-line text)."""
    if f.sensitive:
        return ["  (value changed, not shown)" if f.old is not MISSING and f.new is not MISSING
                else f"{'+' if f.old is MISSING else '-'} {REDACTED}"]
    if _multiline(f):
        old = f.old.splitlines() if isinstance(f.old, str) else ([] if f.old is MISSING else [flow(f.old)])
        new = f.new.splitlines() if isinstance(f.new, str) else ([] if f.new is MISSING else [flow(f.new)])
        return [line for line in difflib.unified_diff(old, new, lineterm="", n=1)][2:]
    lines = []
    if f.old is not MISSING:
        lines += [f"- {line}" for line in (block(f.old) if isinstance(f.old, (dict, list)) and len(flow(f.old)) > MAX_INLINE else [flow(f.old)])]
    if f.new is not MISSING:
        lines += [f"+ {line}" for line in (block(f.new) if isinstance(f.new, (dict, list)) and len(flow(f.new)) > MAX_INLINE else [flow(f.new)])]
    return lines


def field_text(f: FieldChange) -> list[str]:
    """One field for the terminal: `path: old -> new` when it fits one line."""
    if f.sensitive:
        return [f"{f.where}: (value changed, not shown)"]
    if not _multiline(f):
        old, new = flow(f.old), flow(f.new)
        if len(old) + len(new) <= 2 * MAX_INLINE:
            if f.old is MISSING:
                return [f"{f.where}: added {new}"]
            if f.new is MISSING:
                return [f"{f.where}: removed (was {old})"]
            return [f"{f.where}: {old} -> {new}"]
    return [f"{f.where}:", *(f"  {line}" for line in field_diff_lines(f))]


def object_diff_lines(c: ObjectChange) -> list[str]:
    if c.action == "added":
        return [f"+ {line}" for line in block(c.printable("new"))]
    if c.action == "removed":
        return [f"- {line}" for line in block(c.printable("old"))]
    lines = []
    for f in c.fields:
        lines.append(f"# {f.where}")
        lines += field_diff_lines(f)
    return lines


def counts(report: Report) -> dict[tuple[str, str], Counter]:
    table: dict[tuple[str, str], Counter] = {}
    for c in report.changes:
        table.setdefault((c.cluster, c.component), Counter())[c.action] += 1
    return table


def _stale_note(report: Report) -> str | None:
    if not report.stale:
        return None
    n = len(report.stale)
    return (f"the working tree's generated files are out of step with its inventories ({n} file{'s' if n != 1 else ''}); "
            "this diff shows what the inventories give: run `make generate` and commit the result")


def _totals(report: Report) -> str:
    total = Counter(c.action for c in report.changes)
    clusters = sorted({c.cluster for c in report.changes})
    return (f"{total['added']} added, {total['changed']} changed, {total['removed']} removed "
            f"on {len(clusters)} cluster{'s' if len(clusters) != 1 else ''}")


# ---- text ---------------------------------------------------------------------------------------

# --color: what is removed red, what is added green, headings and hunk markers cyan (text only).
ACTION_COLOR = {"added": "green", "removed": "red", "changed": None}


def _painter(color: bool):
    def paint(line: str, fg: str | None) -> str:
        return click.style(line, fg=fg) if color and fg else line
    return paint


def _line_color(line: str) -> str | None:
    """The colour of one line of a field's text: a diff line by its sign, `added`/`removed` by its word."""
    body = line.lstrip()
    if body.startswith("@@"):
        return "cyan"
    if body.startswith("-") or ": removed (was " in body:
        return "red"
    if body.startswith("+") or ": added " in body:
        return "green"
    return None


def _filter_note(report: Report) -> str | None:
    if not report.filters:
        return None
    said = [f"--{key[:-1]} {', '.join(v)}" for key, v in sorted(report.filters.items()) if v]
    hidden = [f"{n} {what}{'s' if n != 1 else ''}" for n, what in ((report.hidden_objects, "object"), (report.hidden_risks, "risk")) if n]
    return f"only {'; '.join(said)}" + (f": {' and '.join(hidden)} of others not shown" if hidden else "")


def text(report: Report, color: bool = False) -> str:
    paint = _painter(color)
    out = [f"forge diff: {report.base_label} -> {report.head_label}"]
    if note := _stale_note(report):
        out.append(f"note: {note}")
    if note := _filter_note(report):
        out.append(f"note: {note}")
    if report.flags:
        out += ["", f"risks ({len(report.flags)}):"]
        out += [paint(f"  {LEVEL_TAG[f.level]:<6} {f.cluster}/{f.component} [{f.kind}] {f.message}", "red" if f.level == "high" else None)
                for f in report.flags]
    out.append("")
    out.append(_totals(report) if report.changed else "no changes")
    if line := reach_line(report.reach):
        out.append(line)
    for cluster in report.clusters:
        changes = report.for_cluster(cluster)
        if not changes:
            out.append("\n" + paint(f"{cluster}: no changes", "cyan"))
            continue
        tally = Counter(c.action for c in changes)
        out.append("\n" + paint(f"{cluster}: {tally['added']} added, {tally['changed']} changed, {tally['removed']} removed", "cyan"))
        component = None
        for c in changes:
            if c.component != component:
                component = c.component
                out.append(paint(f"  {component}", "cyan"))
            out.append(paint(f"    {ACTION_SIGN[c.action]} {c.ident}", ACTION_COLOR[c.action]))
            for f in c.fields:
                out += [paint(f"        {line}", _line_color(line)) for line in field_text(f)]
    return "\n".join(out) + "\n"


# ---- markdown -----------------------------------------------------------------------------------

def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def _details(c: ObjectChange) -> str:
    lines = object_diff_lines(c)
    if len(lines) > MAX_OBJECT_LINES:
        cut = len(lines) - MAX_OBJECT_LINES
        lines = lines[:MAX_OBJECT_LINES] + [f"# ... {cut} more line{'s' if cut != 1 else ''} (run `forge diff` locally for all)"]
    body = "\n".join(lines).replace("```", "` ` `")
    n = len(c.fields)
    what = f"{c.action} {c.ident}" + (f" ({n} field{'s' if n != 1 else ''})" if c.action == "changed" else "")
    return (f"<details><summary><code>{c.cluster}</code> · {c.component} · {_html(what)}</summary>\n\n"
            f"```diff\n{body}\n```\n\n</details>\n")


def _html(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def markdown(report: Report) -> str:
    out = [COMMENT_MARKER, f"### forge diff: `{report.ref}` → {report.head_label}", ""]
    if note := _stale_note(report):
        out += [f"> [!WARNING]\n> {note}", ""]
    if note := _filter_note(report):
        out += [f"> [!NOTE]\n> {note}", ""]
    if not report.changed:
        out.append(f"No Kubernetes object or Helm values change on any cluster ({', '.join(report.clusters)}).")
        return "\n".join(out) + "\n"
    out.append(f"**{_totals(report)}.**")
    if line := reach_line(report.reach):
        out.append(f"Rollout: {line}.")
    out.append("")
    if report.flags:
        out += [f"#### Risks ({len(report.flags)})", "", "| Level | Cluster | Component | Risk |", "| --- | --- | --- | --- |"]
        out += [f"| {'**' + LEVEL_TAG[f.level] + '**' if f.level == 'high' else LEVEL_TAG[f.level]} | {f.cluster} | {f.component} | {_cell(f.message)} |"
                for f in report.flags]
        out.append("")
    else:
        out += ["No risk flags.", ""]
    out += ["#### Changes", "", "| Cluster | Component | Added | Changed | Removed |", "| --- | --- | ---: | ---: | ---: |"]
    for (cluster, component), tally in sorted(counts(report).items()):
        out.append(f"| {cluster} | {component} | {tally['added']} | {tally['changed']} | {tally['removed']} |")
    quiet = [c for c in report.clusters if not report.for_cluster(c)]
    if quiet:
        out += ["", f"No change on: {', '.join(f'`{c}`' for c in quiet)}."]
    out += ["", "#### Objects", ""]
    text_so_far = "\n".join(out)
    budget = MAX_COMMENT_CHARS - len(text_so_far) - 300
    shown = 0
    for c in report.changes:
        piece = _details(c)
        if len(piece) > budget:
            break
        out.append(piece)
        budget -= len(piece) + 1
        shown += 1
    if shown < len(report.changes):
        rest = len(report.changes) - shown
        out.append(f"_{rest} more object{'s' if rest != 1 else ''} not shown (the comment is capped at "
                   f"{MAX_COMMENT_CHARS:,} characters): run `forge diff --base {report.ref}` for the full diff._")
    return "\n".join(out) + "\n"
