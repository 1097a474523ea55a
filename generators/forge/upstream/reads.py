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

import copy
import json
import difflib
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Iterable, Union

from forge.upstream.chart import Chart
from forge.upstream.gotmpl import Action, Block, Item, Paren, Pipeline, Tok, parse
from forge.validate.values import coalesce

Path_ = tuple[str, ...]


class _Root:
    """The root context of a chart's templates (`.` at the top of a template)."""

    def __repr__(self) -> str:
        return "ROOT"


ROOT = _Root()


@dataclass(frozen=True)
class _Dict:
    """A `dict "k" v ...` built in a template, typically a helper's context
    (`include "h" (dict "Values" .Values "cfg" .Values.x)`): its fields keep their bindings."""

    items: tuple[tuple[str, Any], ...]

    def get(self, key: str) -> "Binding":
        return dict(self.items).get(key)


# A binding: ROOT, the set of values paths a value may come from, a template-built dict, or None
# (anything else).
Binding = Union[_Root, frozenset, _Dict, None]
_NO_INPUT = object()

# Functions that consume their arguments as scalars (print, compare, test, transform text):
# a values path reaching them is read, but nothing below it. Any other function may pass a
# subtree on (toYaml, merge, dict, ...): the path is then read whole.
LEAF_FUNCS = frozenset("""
    eq ne lt le gt ge and or not len print printf println quote squote upper lower title untitle
    trim trimAll trimall trimPrefix trimSuffix trunc abbrev abbrevboth nospace replace repeat substr
    contains hasPrefix hasSuffix regexMatch mustRegexMatch regexFind regexFindAll regexReplaceAll
    regexReplaceAllLiteral regexSplit regexQuoteMeta b64enc b64dec b32enc b32dec sha1sum sha256sum
    sha512sum adler32sum int int64 float64 atoi toString toDecimal add add1 sub mul div mod max min
    addf add1f subf mulf divf maxf minf ceil floor round empty kindIs kindOf typeIs typeOf typeIsLike
    semverCompare semver indent nindent cat split splitList splitn join fail snakecase camelcase
    kebabcase swapcase shuffle wrap wrapWith initials plural urlquery html js has mustHas sortAlpha
    uniq base dir ext clean isAbs date dateInZone htmlDate htmlDateInZone toDate mustToDate
    unixEpoch duration durationRound ago now randAlphaNum randAlpha randNumeric randAscii
    uuidv4 first last mustFirst mustLast splitn compact mustCompact lookup slice
    """.split())
# Functions that return one of their arguments as it is: the binding flows on.
PASSTHROUGH_FUNCS = frozenset({"default", "required", "coalesce", "deepCopy", "mustDeepCopy"})


@dataclass
class _Scope:
    prefix: Path_  # where this chart's values sit in the top chart's values
    dot: Binding
    dollar: Binding
    vars: dict[str, Binding] = field(default_factory=dict)
    parent: "_Scope | None" = None

    def child(self, dot: Binding | None = None, keep_dot: bool = True) -> "_Scope":
        return _Scope(self.prefix, self.dot if keep_dot else dot, self.dollar, {}, self)

    def lookup(self, name: str) -> Binding:
        s: _Scope | None = self
        while s is not None:
            if name in s.vars:
                return s.vars[name]
            s = s.parent
        return None

    def assign(self, name: str, value: Binding) -> None:
        s: _Scope | None = self
        while s is not None:
            if name in s.vars:
                s.vars[name] = value
                return
            s = s.parent
        self.vars[name] = value


def _abs(prefix: Path_, rest: Iterable[str]) -> Path_:
    rest = tuple(rest)
    return rest if rest[:1] == ("global",) else prefix + rest


def _lookup(values: Any, path: Iterable[str]) -> tuple[bool, Any]:
    node = values
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


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
            self._walk(tree, _Scope(prefix, ROOT, ROOT))
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
                    self.reads.setdefault(_abs(prefix, ("tags", t)), False)
                if tag_values:
                    enabled, why = any(tag_values), f"tags {', '.join(dep.tags)} are false"
                for cond in (dep.condition or "").split(","):
                    cond = cond.strip()
                    if not cond:
                        continue
                    self.reads.setdefault(_abs(prefix, cond.split(".")), False)
                    found, value = _lookup(merged, cond.split("."))
                    if found and isinstance(value, bool):
                        enabled, why = value, f"{'.'.join(_abs(prefix, cond.split('.')))} is false"
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
        elif isinstance(b, _Dict) and whole:  # passed on whole: all it holds is
            for _, value in b.items:
                self._read(value, True)

    def _walk(self, items: list[Item], sc: _Scope) -> None:
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

    def _bind_or_read(self, p: Pipeline, b: Binding, sc: _Scope) -> None:
        if p.decl:
            for name in p.decl:
                sc.vars[name] = b if len(p.decl) == 1 else None
        self._read(b, False)  # tested for truth (if/with): the value itself is read

    def _action(self, act: Action, sc: _Scope) -> None:
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
                    sc.assign(name, _union(sc.lookup(name), b))
                else:
                    sc.vars[name] = b
        else:
            self._read(b, False)  # printed

    def _call(self, name: str, ctx: Binding, sc: _Scope) -> None:
        body = self._defines.get(name)
        if body is None:
            self._read(ctx, True)  # a helper nobody defines here: assume it uses all of it
            return
        key = (name, sc.prefix, ctx)
        if key in self._done:
            return
        self._done.add(key)
        self._walk(body, _Scope(sc.prefix, ctx, ctx))

    def _eval(self, p: Pipeline, sc: _Scope) -> Binding:
        result: Any = _NO_INPUT
        for cmd in p.commands:
            result = self._command(cmd, sc, result)
        return None if result is _NO_INPUT else result

    def _operand(self, op: Any, sc: _Scope) -> Binding:
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
            return self._func(op.text, [], sc, _NO_INPUT)  # a function called without arguments
        return None

    def _chain(self, base: Binding, parts: list[str], sc: _Scope) -> Binding:
        if "Values" in parts:  # .Values, $.Values, $root.Values, .context.Values: a root context
            rest = tuple(parts[parts.index("Values") + 1:])
            if rest[:1] == ("global",) and sc.prefix:
                # A subchart's globals: the top chart's `global`, merged over what the parent's
                # values set under `<subchart>.global`; both reach it.
                return frozenset({rest, sc.prefix + rest})
            return frozenset({_abs(sc.prefix, rest)})
        return self._fields(base, tuple(parts))

    @staticmethod
    def _fields(base: Binding, parts: tuple[str, ...]) -> Binding:
        if not parts:
            return base
        if isinstance(base, frozenset):
            return frozenset(p + parts for p in base)
        if isinstance(base, _Dict):
            return ReadScan._fields(base.get(parts[0]), parts[1:])
        return None  # .Release.Name, .Chart.Version, a field of a computed value

    def _command(self, cmd: list[Any], sc: _Scope, piped: Any) -> Binding:
        head, args = cmd[0], cmd[1:]
        if isinstance(head, Tok) and head.kind == "ident":
            if head.text in ("nil", "true", "false"):
                return None
            return self._func(head.text, args, sc, piped)
        value = self._operand(head, sc)
        if args or piped is not _NO_INPUT:  # a method call, e.g. .Capabilities.APIVersions.Has "x"
            for a in args:
                self._read(self._operand(a, sc), False)
            if piped is not _NO_INPUT:
                self._read(piped, False)
            return None
        return value

    def _func(self, name: str, args: list[Any], sc: _Scope, piped: Any) -> Binding:
        ops: list[tuple[Any, Binding]] = [(a, self._operand(a, sc)) for a in args]
        if piped is not _NO_INPUT:
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
            return _union(found, bindings[-2])
        if name == "pluck" and ops and lits[0] is not None:
            for b in bindings[1:]:
                self._read(self._fields(b, (lits[0],)), True)
            return None
        if name == "dict" and len(ops) % 2 == 0 and all(k is not None for k in lits[0::2]):
            return _Dict(tuple(zip(lits[0::2], bindings[1::2])))  # type: ignore[arg-type]
        if name in PASSTHROUGH_FUNCS:
            out: Binding = None
            for b in bindings:
                out = _union(out, b)
            return out
        if name == "tpl" and ops:
            for b in bindings:
                self._read(b, True)
            self._tpl(bindings[0], bindings[1] if len(bindings) > 1 else None, sc)
            return None
        if name == "ternary" and len(ops) == 3:
            self._read(bindings[2], False)
            return _union(bindings[0], bindings[1])
        whole = name not in LEAF_FUNCS
        for b in bindings:
            self._read(b, whole)
        return None

    def _tpl(self, source: Binding, ctx: Binding, sc: _Scope) -> None:
        """`tpl P ctx` with P a values path: the string there is a template, run with `.` = ctx."""
        if not isinstance(source, frozenset):
            return
        for path in sorted(source):
            if (path, ctx) in self._tpl_done:
                continue
            self._tpl_done.add((path, ctx))
            chart_values = self._merged.get(sc.prefix, {})
            rel = path[len(sc.prefix):] if path[: len(sc.prefix)] == sc.prefix else path
            found, text = _lookup(chart_values, rel)
            if found and isinstance(text, str) and "{{" in text:
                self._walk(parse(text), _Scope(sc.prefix, ctx, ctx))

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


def _union(a: Binding, b: Binding) -> Binding:
    sets = [x for x in (a, b) if isinstance(x, frozenset)]
    if not sets:
        return None
    return frozenset().union(*sets)


def leaves(values: Any, path: Path_ = ()) -> Iterable[tuple[Path_, Any]]:
    """Every key path we set to a value that is not a non-empty map (scalars, lists, {})."""
    if isinstance(values, dict) and values:
        for key, value in values.items():
            yield from leaves(value, path + (str(key),))
    elif path:
        yield path, values


def unread_keys(chart: Chart, values: dict[str, Any]) -> list[tuple[str, str]]:
    """(dotted key, reason) for every key we set that nothing in the chart reads."""
    scan = ReadScan(chart, values)
    return [(".".join(p), scan.why_unread(p)) for p, _ in leaves(values) if not scan.is_read(p)]


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
        found, default = _lookup(defaults, path)
        if found and value is not None and default == value and type(default) is type(value):
            out.append((".".join(path), f"redundant: {_show(value)} is already the chart's default"))
    return out


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."
