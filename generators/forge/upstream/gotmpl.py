"""A small reader of Go templates, as Helm charts write them: enough to follow where `.Values`
flows, not to execute anything.

`parse(text)` gives the template as a tree of Action (one `{{ ... }}`) and Block (if / with /
range / define / block, with their else branches). An action's pipeline is parsed into commands
and operands; literal text between actions is dropped (it never reads values).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

_TOKEN = re.compile(
    r"""
     (?P<ws>\s+)
    |(?P<str>"(?:[^"\\]|\\.)*")
    |(?P<raw>`[^`]*`)
    |(?P<chr>'(?:[^'\\]|\\.)*')
    |(?P<assign>:=|=)
    |(?P<pipe>\|)
    |(?P<lp>\()
    |(?P<rp>\))
    |(?P<comma>,)
    |(?P<var>\$[A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    |(?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+)
    |(?P<dot>\.)
    |(?P<num>[-+]?[0-9][0-9a-fA-FxXoObB_.]*(?:[eEpP][-+]?[0-9]+)?)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<other>.)
    """,
    re.X | re.S,
)

BLOCK_KEYWORDS = {"if", "with", "range", "define", "block"}


@dataclass(frozen=True)
class Tok:
    kind: str  # str, num, chr, var, field, dot, ident, other
    text: str

    @property
    def literal(self) -> str | None:
        """The value of a string literal, else None."""
        if self.kind == "str":
            return bytes(self.text[1:-1], "utf-8").decode("unicode_escape", "replace")
        if self.kind == "raw":
            return self.text[1:-1]
        return None


@dataclass
class Paren:
    pipeline: "Pipeline"
    fields: tuple[str, ...] = ()  # `(expr).a.b`


Operand = Union[Tok, Paren]


@dataclass
class Pipeline:
    decl: tuple[str, ...] = ()  # variable names declared/assigned by `$a, $b :=`
    assign: str = ""  # ":=" declares, "=" assigns an existing variable
    commands: list[list[Operand]] = field(default_factory=list)


@dataclass
class Action:
    keyword: str | None  # if, else, with, range, end, define, block, template, or None
    name: str | None  # define/block/template name
    pipeline: Pipeline
    else_keyword: str | None = None  # `else if` / `else with`
    line: int = 0


@dataclass
class Block:
    head: Action
    body: list["Item"]
    branches: list[tuple[Action, list["Item"]]] = field(default_factory=list)  # else branches


Item = Union[Action, Block]


def _tokens(text: str) -> list[Tok]:
    out: list[Tok] = []
    prev_rp = False
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        if kind == "ws":
            prev_rp = False
            continue
        if kind == "field" and prev_rp:
            kind = "postfield"
        out.append(Tok(kind, m.group()))
        prev_rp = kind == "rp"
    return out


def _actions(text: str) -> list[tuple[str, int]]:
    """The inside of every `{{ ... }}` that is not a comment, trim markers removed, with its line."""
    out: list[tuple[str, int]] = []
    i, n = 0, len(text)
    while True:
        start = text.find("{{", i)
        if start < 0:
            return out
        j = start + 2
        inner_start = j
        if text.startswith("-", j) and j + 1 < n and text[j + 1].isspace():
            inner_start = j + 1
        stripped = text[inner_start:].lstrip()
        if stripped.startswith("/*"):
            close = text.find("*/", inner_start)
            end = text.find("}}", close if close >= 0 else inner_start)
            i = (end + 2) if end >= 0 else n
            continue
        quote = None
        while j < n:
            ch = text[j]
            if quote:
                if ch == "\\" and quote != "`":
                    j += 2
                    continue
                if ch == quote:
                    quote = None
            elif ch in "\"`'":
                quote = ch
            elif text.startswith("}}", j):
                break
            j += 1
        inner = text[inner_start:j]
        if inner.endswith("-") and len(inner) > 1 and inner[-2].isspace():
            inner = inner[:-1]
        out.append((inner.strip(), text.count("\n", 0, start) + 1))
        i = j + 2


class _Parser:
    def __init__(self, toks: list[Tok]):
        self.toks, self.i = toks, 0

    def peek(self, k: int = 0) -> Tok | None:
        return self.toks[self.i + k] if self.i + k < len(self.toks) else None

    def pipeline(self) -> Pipeline:
        p = Pipeline()
        # Declarations: `$x :=`, `$x =`, `$k, $v :=`.
        names: list[str] = []
        j = self.i
        while j < len(self.toks) and self.toks[j].kind == "var" and "." not in self.toks[j].text:
            names.append(self.toks[j].text)
            if j + 1 < len(self.toks) and self.toks[j + 1].kind == "comma":
                j += 2
                continue
            break
        if names and j + 1 < len(self.toks) and self.toks[j + 1].kind == "assign":
            p.decl = tuple(names)
            p.assign = self.toks[j + 1].text
            self.i = j + 2
        cmd: list[Operand] = []
        while (t := self.peek()) is not None and t.kind != "rp":
            self.i += 1
            if t.kind == "pipe":
                p.commands.append(cmd)
                cmd = []
            elif t.kind == "lp":
                inner = self.pipeline()
                if (close := self.peek()) is not None and close.kind == "rp":
                    self.i += 1
                fields: tuple[str, ...] = ()
                if (pf := self.peek()) is not None and pf.kind == "postfield":
                    self.i += 1
                    fields = tuple(pf.text.strip(".").split("."))
                cmd.append(Paren(inner, fields))
            elif t.kind == "comma":
                continue
            else:
                cmd.append(t)
        if cmd:
            p.commands.append(cmd)
        return p


def parse_action(inner: str, line: int = 0) -> Action:
    toks = _tokens(inner)
    keyword = name = else_kw = None
    if toks and toks[0].kind == "ident" and toks[0].text in BLOCK_KEYWORDS | {"else", "end", "template", "break", "continue"}:
        keyword = toks[0].text
        toks = toks[1:]
        if keyword == "else" and toks and toks[0].kind == "ident" and toks[0].text in ("if", "with", "range"):
            else_kw = toks[0].text
            toks = toks[1:]
        if keyword in ("define", "block", "template") and toks and toks[0].literal is not None:
            name = toks[0].literal
            toks = toks[1:]
    return Action(keyword, name, _Parser(toks).pipeline(), else_kw, line)


def parse(text: str) -> list[Item]:
    """The template as a tree. Unbalanced `end`s are tolerated (Helm would refuse the chart)."""
    root: list[Item] = []
    stack: list[tuple[Block, list[Item]]] = []
    current = root
    for inner, line in _actions(text):
        action = parse_action(inner, line)
        if action.keyword in BLOCK_KEYWORDS:
            block = Block(action, [])
            current.append(block)
            stack.append((block, current))
            current = block.body
        elif action.keyword == "else" and stack:
            block = stack[-1][0]
            block.branches.append((action, []))
            current = block.branches[-1][1]
        elif action.keyword == "end" and stack:
            _, current = stack.pop()
        else:
            current.append(action)
    return root
