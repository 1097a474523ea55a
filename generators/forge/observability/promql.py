"""PromQL building blocks of the alert rules: regex alternations, label selectors, alert rules."""
from __future__ import annotations

import re
from typing import Any, Iterable

_REGEX_SPECIAL = re.compile(r"([.+*?()\[\]{}|^$\\])")


def regex_alternation(values: Iterable[str]) -> str:
    """A PromQL regex matching exactly these values (PromQL regexes are fully anchored), as it goes
    between the double quotes of a PromQL string: a regex escape is written `\\.`."""
    return "|".join(_REGEX_SPECIAL.sub(r"\\\\\1", v) for v in sorted(set(values)))


def selector(**matchers: str) -> str:
    """{a="x", b=~"y", c!~"z"}: a key ending in _re is a regex matcher on the key without it,
    one ending in _nre a negative regex matcher."""
    parts = []
    for key, value in matchers.items():
        if key.endswith("_re"):
            parts.append(f'{key[:-3]}=~"{value}"')
        elif key.endswith("_nre"):
            parts.append(f'{key[:-4]}!~"{value}"')
        else:
            parts.append(f'{key}="{value}"')
    return "{" + ", ".join(parts) + "}"


def on_nodes_of(vector: str, node_info: str, profiles: Iterable[str], node_label: str = "node") -> str:
    """`vector` kept on the inventory's nodes of these profiles only: a join on the inventory's
    one-per-node series (forge:node_info, labels node, rack, profile) instead of a regex listing
    every node, so adding a node changes that node's recording rule and never the alert's
    expression. `and` keeps the vector's labels and values as they were."""
    names = sorted(set(profiles))
    # Profile names are DNS labels: nothing to escape.
    match = selector(profile=names[0]) if len(names) == 1 else selector(profile_re="|".join(names))
    return f"({vector} and on ({node_label}) {node_info}{match})"


def alert(name: str, expr: str, severity: str, summary: str, runbook: str, for_: str | None = None,
          labels: dict[str, str] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"alert": name, "expr": expr}
    if for_:
        rule["for"] = for_
    rule["labels"] = {"severity": severity, **(labels or {})}
    rule["annotations"] = {"summary": summary, "runbook": runbook}
    return rule
