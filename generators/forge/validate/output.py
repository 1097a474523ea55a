"""`forge validate`'s outputs: text for people, JSON for programs (a versioned shape,
docs/cli.md), GitHub workflow commands for pull-request annotations."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import click

from forge import ghactions
from forge.validate.engine import Report
from forge.validate.failure import Failure
from forge.validate.locate import Place, locate

JSON_VERSION = 1


def _where(place: Place | None) -> str:
    if place is None:
        return ""
    return f"  at {place.file}:{place.line}" + (f" (from {place.source}:{place.source_line})" if place.source else "")


def _entry(failure: Failure, place: Place | None) -> dict:
    return {"cluster": failure.cluster, "component": failure.component, "object": failure.object, "path": failure.path,
            "reason": failure.reason, "file": place.file if place else None, "line": place.line if place else None,
            "source": place.source if place else None, "source_line": place.source_line if place and place.source else None}


def _github(failure: Failure, place: Place | None, level: str) -> str:
    file = line = None
    if place is not None:  # the file a pull request shows: what forge wrote the object from, else the rendered one
        file, line = (place.source, place.source_line) if place.source else (place.file, place.line)
    return ghactions.command(level, f"{failure.object} / {failure.path or '-'} / {failure.reason}", file=file, line=line,
                             title=f"forge validate: {failure.cluster} / {failure.component}")


def summary(report: Report) -> str:
    return (f"validated {report.objects} objects and {report.values_files} values files in {report.seconds:.2f}s "
            f"({report.rate:,.0f} objects/s): {len(report.failures)} failures, {len(report.unchecked)} unchecked")


def show(root: Path, report: Report, output: str, fmt: str) -> None:
    places = [locate(root, f) for f in report.failures]
    unchecked = sorted(Counter(report.unchecked).items())
    if output == "json":
        click.echo(json.dumps({
            "kind": "forge.validate", "version": JSON_VERSION, "ok": not report.failures,
            "objects": report.objects, "values_files": report.values_files,
            "failures": [_entry(f, p) for f, p in zip(report.failures, places)],
            "warnings": [_entry(w, None) for w in report.warnings],
            "unchecked": [{"item": item, "count": count} for item, count in unchecked],
        }, indent=2, sort_keys=True))
        return
    for failure, place in zip(report.failures, places):
        if fmt == "github":
            click.echo(_github(failure, place, "error"))
        click.echo(f"FAIL {failure.line()}", err=True)
        if place is not None:
            click.echo(_where(place), err=True)
    for warning in report.warnings:
        if fmt == "github":
            click.echo(_github(warning, None, "warning"))
        click.echo(f"warning: {warning.line()}", err=True)
    for item, count in unchecked:
        if fmt == "github":
            click.echo(ghactions.command("warning", f"{item} (no upstream data)", title="forge validate: unchecked"))
        click.echo(f"unchecked (no upstream data): {item}{f' x{count}' if count > 1 else ''}", err=True)
    click.echo(summary(report))
