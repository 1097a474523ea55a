"""Values we set to exactly the chart's own default: they do nothing today (a warning, since
someone may pin a default on purpose against a chart bump)."""
from __future__ import annotations

import copy
import json
from typing import Any, Iterable

from forge.upstream.bindings import Path_, lookup_path
from forge.upstream.chart import Chart
from forge.validate.values import coalesce


def leaves(values: Any, path: Path_ = ()) -> Iterable[tuple[Path_, Any]]:
    """Every key path we set to a value that is not a non-empty map (scalars, lists, {})."""
    if isinstance(values, dict) and values:
        for key, value in values.items():
            yield from leaves(value, path + (str(key),))
    elif path:
        yield path, values


def effective_defaults(chart: Chart) -> dict[str, Any]:
    """The chart's defaults with each subchart's under its key (the parent's overrides on top)."""
    out = copy.deepcopy(chart.values)
    for key, sub in chart.subcharts.items():
        over = out.get(key) if isinstance(out.get(key), dict) else {}
        out[key] = coalesce(effective_defaults(sub), over)
    return out


def redundant_keys(chart: Chart, values: dict[str, Any], exempt: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(dotted key, reason) for every key we set to exactly the chart's own default, except the
    exempt ones (and what is below them): values computed from the inventory."""
    defaults = effective_defaults(chart)
    exempt = tuple(exempt)
    out = []
    for path, value in leaves(values):
        dotted = ".".join(path)
        if any(dotted == e or dotted.startswith(e + ".") for e in exempt):
            continue
        found, default = lookup_path(defaults, path)
        if found and value is not None and default == value and type(default) is type(value):
            out.append((".".join(path), f"redundant: {_show(value)} is already the chart's default"))
    return out


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."
