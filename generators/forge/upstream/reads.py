"""Which values keys a chart reads: a static scan of its templates, to report the keys we set
that nothing reads (Helm ignores them silently) and the keys we set to the chart's own default.

How a key is decided to be read
-------------------------------
Every template of the chart and of each *enabled* subchart (Chart.yaml `condition`/`tags`
evaluated on the chart's defaults merged with our values, as Helm does) is parsed into actions
(forge.upstream.gotmpl), and each action's pipeline is followed:

* `.Values.a.b`, `$.Values.a.b`, `$root.Values.a.b`, `.ctx.Values.a.b` name the path a.b of the
  chart the template belongs to (a subchart's path is prefixed by its key, alias or name, in the
  parent's values; `global.*` is shared by all charts, and a subchart also gets its parent's
  `<subchart>.global.*`);
* `index P "k" "l"`, `get P "k"`, `hasKey P "k"`, `dig "k" "l" d P`, `pluck "k" P` extend P by
  literal keys; with a non-literal key (`index .Values.images $name`) P is read whole;
* `.` is rebound by `with P` (so `.x` inside is P.x) and by a helper call `include "h" P`, whose
  `define` body is then followed with `.` = P; `$v := P` binds a variable the same way; a helper
  context built with `dict "k" P ...` keeps its fields (`.k.x` inside is P.x);
* a path is read *whole* (every key below it counts as read) when it reaches a function that can
  pass a subtree on: `toYaml`, `toJson`, `tpl`, `merge`, `dict`, `list`, `set`, `keys`, ... —
  any function not in the small list of scalar functions below (`quote`, `eq`, `default`, ...);
  when it is ranged over (`range P`); or when it is passed to a helper that no chart defines;
* otherwise the path itself is read (printed, compared, tested) but nothing below it;
* a dependency's `condition` paths and `tags.<tag>` are read (by Helm itself);
* `tpl P ctx` where P is a values path holding a string (in the chart's defaults or our values):
  that string is template code too, walked like a template with `.` = ctx (Loki builds its whole
  configuration from `tpl .Values.loki.config .`, a template in its values.yaml).

A key we set is *read* when that path, or a path below it, is read, or an ancestor of it is read
whole. NOTES.txt is left out: nothing in it reaches the cluster.

Where the method can miss (report a key as read that has no effect)
------------------------------------------------------------------
* a read inside a branch that our other values switch off (`{{ if .Values.x.enabled }}` around
  the read of `.Values.x.port`, with `x.enabled: false`): the scan does not evaluate conditions;
* a subtree passed whole counts as read even when its consumer ignores part of it (`toYaml
  .Values.x.config` into a custom resource: the CRD schema check of the hydrated output catches
  unknown fields there; into a ConfigMap: nothing does);
* an intermediate path used in an action with an unknown function (treated as passing it on);
* a helper called with a context computed otherwise than by `dict` (`merge`, `set`, `list`): what
  it holds is read whole.
And where it can report a key that is read (a false alarm, visible and fixable):
* template code in a string that is not itself a values path (`tpl (toYaml .Values.x) .` over
  strings nested inside .Values.x) or in files read with `.Files.Get`;
* `.Subcharts.<name>.Values` and other reflective access.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from forge.upstream.bindings import (LEAF_FUNCS, NO_INPUT, PASSTHROUGH_FUNCS, ROOT, Binding, Path_, Scope,
                                     TemplateDict, absolute, lookup_path, union)
from forge.upstream.chart import Chart
from forge.upstream.gotmpl import Action, Block, Item, Paren, Pipeline, Tok, parse
from forge.upstream.redundant import leaves, redundant_keys
from forge.validate.values import coalesce

__all__ = ["ReadScan", "unread_keys", "redundant_keys"]


@dataclass
class Disabled:
    chart: Chart
    why: str


class ReadScan:
    """The values paths one chart (with its enabled subcharts) reads, given our values."""

    def __init__(self, chart: Chart, values: dict[str, Any]):
        self.chart = chart
        self.reads: dict[Path_, bool] = {}  # path -> read whole
        self.disabled: dict[Path_, Disabled] = {}
        self._defines: dict[str, list[Item]] = {}
        self._done: set[tuple[str, Path_, Any]] = set()
        self._merged: dict[Path_, dict[str, Any]] = {}  # each chart's values as Helm gives them, by prefix
        self._tpl_done: set[tuple[Path_, Any]] = set()
        charts: list[tuple[Path_, Chart]] = []
        self._collect(chart, (), coalesce(chart.values, values), charts)
        parsed = [(prefix, c, name, parse(text)) for prefix, c in charts for name, text in sorted(c.templates.items())]
        for _, _, _, tree in parsed:  # the top chart's helpers first: Helm lets the parent's win
            for item in tree:
                if isinstance(item, Block) and item.head.keyword in ("define", "block") and item.head.name:
                    self._defines.setdefault(item.head.name, item.body)
        for prefix, c, name, tree in parsed:
            if c.type == "library" or PurePosixPath(name).name.startswith("_"):
                continue  # helpers only: followed where they are called
            self._walk(tree, Scope(prefix, ROOT, ROOT))
        self._below = {p[:i] for p in self.reads for i in range(len(p))}

    # ---- the chart tree, as Helm enables it ----------------------------------------------------

    def _collect(self, chart: Chart, prefix: Path_, merged: dict[str, Any], out: list[tuple[Path_, Chart]]) -> None:
        out.append((prefix, chart))
        self._merged[prefix] = merged
        deps = {d.key: d for d in chart.dependencies}
        for key, sub in chart.subcharts.items():
            dep = deps.get(key)
            enabled, why = True, ""
            if dep is not None:
                tags = merged.get("tags") if isinstance(merged.get("tags"), dict) else {}
                tag_values = [tags[t] for t in dep.tags if isinstance(tags.get(t), bool)]
                for t in dep.tags:
                    self.reads.setdefault(absolute(prefix, ("tags", t)), False)
                if tag_values:
                    enabled, why = any(tag_values), f"tags {', '.join(dep.tags)} are false"
                for cond in (dep.condition or "").split(","):
                    cond = cond.strip()
                    if not cond:
                        continue
                    self.reads.setdefault(absolute(prefix, cond.split(".")), False)
                    found, value = lookup_path(merged, cond.split("."))
                    if found and isinstance(value, bool):
                        enabled, why = value, f"{'.'.join(absolute(prefix, cond.split('.')))} is false"
                        break
            here = prefix + (key,)
            if not enabled:
                self.disabled[here] = Disabled(sub, why)
                continue
            sub_values = merged.get(key) if isinstance(merged.get(key), dict) else {}
            globals_ = merged.get("global") if isinstance(merged.get("global"), dict) else {}
            sub_merged = coalesce(sub.values, sub_values)
            sub_merged["global"] = coalesce(sub_merged.get("global") or {}, globals_)
            self._collect(sub, here, sub_merged, out)

    # ---- following .Values through the templates -------------------------------------------------

    def _read(self, b: Binding, whole: bool) -> None:
        if isinstance(b, frozenset):
            for p in b:
                self.reads[p] = self.reads.get(p, False) or whole
        elif isinstance(b, TemplateDict) and whole:  # passed on whole: all it holds is
            for _, value in b.items:
                self._read(value, True)

    def _walk(self, items: list[Item], sc: Scope) -> None:
        for item in items:
            if isinstance(item, Action):
                self._action(item, sc)
                continue
            head = item.head
            kind = head.keyword
            if kind == "define":
                continue
            if kind == "block":
                self._call(head.name or "", self._eval(head.pipeline, sc), sc)
                continue
            inner = sc.child()
            b = self._eval(head.pipeline, inner)
            if kind == "range":
                self._read(b, True)
                for name in head.pipeline.decl:
                    inner.vars[name] = None
                inner.dot = None
            else:
                self._bind_or_read(head.pipeline, b, inner)
                if kind == "with":
                    inner.dot = b
            self._walk(item.body, inner)
            for act, body in item.branches:
                branch = sc.child()
                if act.else_keyword in ("if", "with"):
                    b = self._eval(act.pipeline, branch)
                    self._bind_or_read(act.pipeline, b, branch)
                    if act.else_keyword == "with":
                        branch.dot = b
                elif act.else_keyword == "range":
                    self._read(self._eval(act.pipeline, branch), True)
                    branch.dot = None
                self._walk(body, branch)

    def _bind_or_read(self, p: Pipeline, b: Binding, sc: Scope) -> None:
        if p.decl:
            for name in p.decl:
                sc.vars[name] = b if len(p.decl) == 1 else None
        self._read(b, False)  # tested for truth (if/with): the value itself is read

    def _action(self, act: Action, sc: Scope) -> None:
        if act.keyword == "template":
            ctx = self._eval(act.pipeline, sc) if act.pipeline.commands else None
            self._call(act.name or "", ctx, sc)
            return
        if act.keyword in ("end", "else", "break", "continue"):
            return
        b = self._eval(act.pipeline, sc)
        if act.pipeline.decl:
            for name in act.pipeline.decl:
                if act.pipeline.assign == "=":  # may run or not: either value can reach a use
                    sc.assign(name, union(sc.lookup(name), b))
                else:
                    sc.vars[name] = b
        else:
            self._read(b, False)  # printed

    def _call(self, name: str, ctx: Binding, sc: Scope) -> None:
        body = self._defines.get(name)
        if body is None:
            self._read(ctx, True)  # a helper nobody defines here: assume it uses all of it
            return
        key = (name, sc.prefix, ctx)
        if key in self._done:
            return
        self._done.add(key)
        self._walk(body, Scope(sc.prefix, ctx, ctx))

    def _eval(self, p: Pipeline, sc: Scope) -> Binding:
        result: Any = NO_INPUT
        for cmd in p.commands:
            result = self._command(cmd, sc, result)
        return None if result is NO_INPUT else result

    def _operand(self, op: Any, sc: Scope) -> Binding:
        if isinstance(op, Paren):
            return self._fields(self._eval(op.pipeline, sc), op.fields)
        if not isinstance(op, Tok):
            return None
        if op.kind == "dot":
            return sc.dot
        if op.kind == "field":
            return self._chain(sc.dot, op.text.strip(".").split("."), sc)
        if op.kind == "var":
            name, _, rest = op.text.partition(".")
            base = sc.dollar if name == "$" else sc.lookup(name)
            return self._chain(base, rest.split(".") if rest else [], sc)
        if op.kind == "ident":
            return self._func(op.text, [], sc, NO_INPUT)  # a function called without arguments
        return None

    def _chain(self, base: Binding, parts: list[str], sc: Scope) -> Binding:
        if "Values" in parts:  # .Values, $.Values, $root.Values, .context.Values: a root context
            rest = tuple(parts[parts.index("Values") + 1:])
            if rest[:1] == ("global",) and sc.prefix:
                # A subchart's globals: the top chart's `global`, merged over what the parent's
                # values set under `<subchart>.global`; both reach it.
                return frozenset({rest, sc.prefix + rest})
            return frozenset({absolute(sc.prefix, rest)})
        return self._fields(base, tuple(parts))

    @staticmethod
    def _fields(base: Binding, parts: tuple[str, ...]) -> Binding:
        if not parts:
            return base
        if isinstance(base, frozenset):
            return frozenset(p + parts for p in base)
        if isinstance(base, TemplateDict):
            return ReadScan._fields(base.get(parts[0]), parts[1:])
        return None  # .Release.Name, .Chart.Version, a field of a computed value

    def _command(self, cmd: list[Any], sc: Scope, piped: Any) -> Binding:
        head, args = cmd[0], cmd[1:]
        if isinstance(head, Tok) and head.kind == "ident":
            if head.text in ("nil", "true", "false"):
                return None
            return self._func(head.text, args, sc, piped)
        value = self._operand(head, sc)
        if args or piped is not NO_INPUT:  # a method call, e.g. .Capabilities.APIVersions.Has "x"
            for a in args:
                self._read(self._operand(a, sc), False)
            if piped is not NO_INPUT:
                self._read(piped, False)
            return None
        return value

    def _func(self, name: str, args: list[Any], sc: Scope, piped: Any) -> Binding:
        ops: list[tuple[Any, Binding]] = [(a, self._operand(a, sc)) for a in args]
        if piped is not NO_INPUT:
            ops.append((None, piped))
        lits = [op.literal if isinstance(op, Tok) else None for op, _ in ops]
        bindings = [b for _, b in ops]

        if name in ("include", "template"):
            if not lits or lits[0] is None:
                for b in bindings:
                    self._read(b, True)
                return None
            self._call(lits[0], bindings[1] if len(bindings) > 1 else None, sc)
            return None
        if name in ("index", "get") and ops:
            base, keys = bindings[0], lits[1:]
            if all(k is not None for k in keys):
                return self._fields(base, tuple(keys))  # type: ignore[arg-type]
            self._read(base, True)
            for b in bindings[1:]:
                self._read(b, False)
            return None
        if name == "hasKey" and len(ops) == 2:
            if lits[1] is not None:
                self._read(self._fields(bindings[0], (lits[1],)), False)
            else:
                self._read(bindings[0], True)
            return None
        if name == "dig" and len(ops) >= 3:
            keys = lits[:-2]
            if all(k is not None for k in keys):
                found = self._fields(bindings[-1], tuple(keys))  # type: ignore[arg-type]
            else:
                self._read(bindings[-1], True)
                found = None
            return union(found, bindings[-2])
        if name == "pluck" and ops and lits[0] is not None:
            for b in bindings[1:]:
                self._read(self._fields(b, (lits[0],)), True)
            return None
        if name == "dict" and len(ops) % 2 == 0 and all(k is not None for k in lits[0::2]):
            return TemplateDict(tuple(zip(lits[0::2], bindings[1::2])))  # type: ignore[arg-type]
        if name in PASSTHROUGH_FUNCS:
            out: Binding = None
            for b in bindings:
                out = union(out, b)
            return out
        if name == "tpl" and ops:
            for b in bindings:
                self._read(b, True)
            self._tpl(bindings[0], bindings[1] if len(bindings) > 1 else None, sc)
            return None
        if name == "ternary" and len(ops) == 3:
            self._read(bindings[2], False)
            return union(bindings[0], bindings[1])
        whole = name not in LEAF_FUNCS
        for b in bindings:
            self._read(b, whole)
        return None

    def _tpl(self, source: Binding, ctx: Binding, sc: Scope) -> None:
        """`tpl P ctx` with P a values path: the string there is a template, run with `.` = ctx."""
        if not isinstance(source, frozenset):
            return
        for path in sorted(source):
            if (path, ctx) in self._tpl_done:
                continue
            self._tpl_done.add((path, ctx))
            chart_values = self._merged.get(sc.prefix, {})
            rel = path[len(sc.prefix):] if path[: len(sc.prefix)] == sc.prefix else path
            found, text = lookup_path(chart_values, rel)
            if found and isinstance(text, str) and "{{" in text:
                self._walk(parse(text), Scope(sc.prefix, ctx, ctx))

    # ---- answers ------------------------------------------------------------------------------

    def is_read(self, path: Path_) -> bool:
        if path in self._below:
            return True  # something below it is read
        for i in range(len(path), -1, -1):
            whole = self.reads.get(path[:i])
            if whole is not None and (whole or i == len(path)):
                return True
        return False

    def why_unread(self, path: Path_) -> str:
        for prefix, off in sorted(self.disabled.items(), key=lambda kv: -len(kv[0])):
            if path[: len(prefix)] == prefix:
                return (f"ignored: subchart {off.chart.label} ('{'.'.join(prefix)}') is disabled "
                        f"({off.why}), Helm does not render it")
        siblings = sorted({p[len(path) - 1] for p in list(self.reads) + list(self._below)
                           if len(p) >= len(path) and p[: len(path) - 1] == path[:-1]})
        close = difflib.get_close_matches(path[-1], siblings, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        subs = " or its subcharts" if self.chart.subcharts else ""
        return f"ignored: no template of {self.chart.label}{subs} reads it{hint}"


def unread_keys(chart: Chart, values: dict[str, Any]) -> list[tuple[str, str]]:
    """(dotted key, reason) for every key we set that nothing in the chart reads."""
    scan = ReadScan(chart, values)
    return [(".".join(p), scan.why_unread(p)) for p, _ in leaves(values) if not scan.is_read(p)]
