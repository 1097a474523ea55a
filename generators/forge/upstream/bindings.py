"""What a value in a chart's templates is bound to, as forge.upstream.reads follows it: the root
context, a set of values paths, a template-built dict, or nothing known; the scopes of variables;
and which template functions read a path as a scalar or pass it on."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Union

Path_ = tuple[str, ...]


class Root:
    """The root context of a chart's templates (`.` at the top of a template)."""

    def __repr__(self) -> str:
        return "ROOT"


ROOT = Root()


@dataclass(frozen=True)
class TemplateDict:
    """A `dict "k" v ...` built in a template, typically a helper's context
    (`include "h" (dict "Values" .Values "cfg" .Values.x)`): its fields keep their bindings."""

    items: tuple[tuple[str, Any], ...]

    def get(self, key: str) -> "Binding":
        return dict(self.items).get(key)


# A binding: ROOT, the set of values paths a value may come from, a template-built dict, or None
# (anything else).
Binding = Union[Root, frozenset, TemplateDict, None]
NO_INPUT = object()  # a function called with nothing piped in

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
class Scope:
    prefix: Path_  # where this chart's values sit in the top chart's values
    dot: Binding
    dollar: Binding
    vars: dict[str, Binding] = field(default_factory=dict)
    parent: "Scope | None" = None

    def child(self, dot: Binding | None = None, keep_dot: bool = True) -> "Scope":
        return Scope(self.prefix, self.dot if keep_dot else dot, self.dollar, {}, self)

    def lookup(self, name: str) -> Binding:
        s: Scope | None = self
        while s is not None:
            if name in s.vars:
                return s.vars[name]
            s = s.parent
        return None

    def assign(self, name: str, value: Binding) -> None:
        s: Scope | None = self
        while s is not None:
            if name in s.vars:
                s.vars[name] = value
                return
            s = s.parent
        self.vars[name] = value


def absolute(prefix: Path_, rest: Iterable[str]) -> Path_:
    rest = tuple(rest)
    return rest if rest[:1] == ("global",) else prefix + rest


def lookup_path(values: Any, path: Iterable[str]) -> tuple[bool, Any]:
    node = values
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


def union(a: Binding, b: Binding) -> Binding:
    sets = [x for x in (a, b) if isinstance(x, frozenset)]
    if not sets:
        return None
    return frozenset().union(*sets)
