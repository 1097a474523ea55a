"""Read inventory YAML keeping line numbers, validate its shape and rules, report every problem.

The YAML is composed into nodes (which know their lines), then built into plain Python values
(so pydantic's strict mode sees real ints and strs) alongside a map from field path to line,
which turns every error into `file:line: path: message`.
"""
from __future__ import annotations

import datetime
import errno
import types
import typing
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ValidationError
import yaml

from forge.files.datafile import data_path
from forge.errors import InventoryError, Problem
from forge.files.textguard import read_regular
from forge.inventory import credentials, formats, guards
from forge.inventory.checks import check_inventory, check_raw  # rules that span fields
from forge.inventory.located import LoadedInventory, Path_, format_path, line_for
from forge.inventory.schema import PATTERN_WORDS, Inventory

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Builder:
    """Builds plain data from composed nodes, recording each key's and item's line, within the
    limits of `guards.Budget` (aliases are shared nodes: an alias bomb or a self-reference is
    refused here, before it expands)."""

    def __init__(self, loader: Any, file: str) -> None:
        self.loader, self.file = loader, file
        self.lines: dict[Path_, int] = {(): 1}
        self.dups: list[Problem] = []
        self.budget = guards.Budget()
        self.active: dict[int, int] = {}  # nodes being built -> their line: an alias to one is a cycle

    def build(self, node: yaml.Node, path: Path_) -> Any:
        refused = self.budget.enter(node, len(path), self.active)
        if refused:
            # An alias's node is the anchored one (its line is the anchor's): the nearest key names the use.
            at = next((path[:end] for end in range(len(path), 0, -1) if isinstance(path[end - 1], str)), ())
            raise InventoryError([Problem(self.file, self.lines.get(at, 1), format_path(at), refused)])
        if isinstance(node, yaml.MappingNode):
            self.active[id(node)] = node.start_mark.line + 1
            out: Any = self._mapping(node, path)
        elif isinstance(node, yaml.SequenceNode):
            self.active[id(node)] = node.start_mark.line + 1
            out = []
            for index, item in enumerate(node.value):
                self.lines[path + (index,)] = item.start_mark.line + 1
                out.append(self.build(item, path + (index,)))
        else:
            return self._scalar(node, path)
        del self.active[id(node)]
        return out

    def _mapping(self, node: yaml.MappingNode, path: Path_) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                raise InventoryError([Problem(self.file, line, format_path(path),
                                              "a key must be plain text, not a list or a mapping")])
            key = self._scalar(key_node, path)
            if not isinstance(key, str):  # every key of an inventory is a name; YAML reads `yes:` as true, `1:` as 1
                raise InventoryError([Problem(self.file, line, format_path(path),
                                              f"key {key_node.value!r} is read as {_describe(key)}, not text: quote it")])
            here = path + (key,)
            if key in out:
                self.dups.append(Problem(self.file, line, format_path(here),
                                         f"duplicate key '{key}' (first at line {self.lines[here]}): YAML keeps only the last"))
                continue
            self.lines[here] = line
            out[key] = self.build(value_node, here)
        return out

    def _scalar(self, node: yaml.Node, path: Path_) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.MarkedYAMLError:
            raise
        except Exception as exc:  # a bad explicit tag (`!!int x`, `!!timestamp 2020-13-45`) or too many digits
            reason = "it has thousands of digits, more than any real value" if "digits" in str(exc) else str(exc)
            raise InventoryError([Problem(self.file, node.start_mark.line + 1, format_path(path),
                                          f"cannot read {str(node.value)[:40]!r} as {node.tag.rsplit(':', 1)[-1]}: {reason}")]) from None


def parse_yaml(text: str, file: str) -> tuple[Any, dict[Path_, int]]:
    """Parse with PyYAML's C parser (ruamel's pure-Python round trip is ~20x slower on a large
    fleet), keeping the line of every key and list item. Duplicate keys are errors, not silence."""
    guards.check_printable(text, file)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        builder = _Builder(loader, file)
        data = builder.build(node, ()) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # At the end of a file without a final line break, libyaml's mark is one line past it.
        line = min(mark.line + 1, text.count("\n") + 1) if mark else 1
        message = f"not valid YAML: {exc.problem or exc}"
        if exc.context and exc.context_mark and exc.context_mark.line + 1 != line:
            message += f" ({exc.context.strip()} at line {exc.context_mark.line + 1})"
        raise InventoryError([Problem(file, line, "", message)]) from None
    except yaml.YAMLError as exc:  # the reader's errors carry no line; check_printable catches them first
        raise InventoryError([Problem(file, 1, "", f"not valid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if builder.dups:
        raise InventoryError(builder.dups)
    return data, builder.lines


_TYPE_NAMES = {
    "string_type": "a string", "int_type": "an integer", "bool_type": "true or false",
    "float_type": "a number", "dict_type": "a mapping", "list_type": "a list",
    "model_type": "a mapping", "model_attributes_type": "a mapping", "int_from_float": "an integer",
}


def _describe(value: Any) -> str:
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "mapping",
            list: "list", type(None): "nothing"}.get(type(value), type(value).__name__)
    shown = "" if isinstance(value, (dict, list)) or value is None else f" {value!r}"
    if isinstance(value, (datetime.date, bytes)):  # YAML read a date or !!binary: show it as written
        shown = f" {value.isoformat() if isinstance(value, datetime.date) else repr(value)[:40]}"
    return f"{kind}{shown}"


def _unwrap(annotation: Any) -> list[Any]:
    """The model classes an annotation can hold (through Optional, list, dict, Annotated)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if origin in (list, dict, typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        args = args[1:] if origin is dict else args
        return [m for arg in args for m in _unwrap(arg)]
    return []


def _model_at(model: type[BaseModel], path: Path_) -> type[BaseModel] | None:
    current: list[type[BaseModel]] = [model]
    for part in path:
        if isinstance(part, int):
            continue
        nxt = []
        for m in current:
            field = m.model_fields.get(part)
            nxt += _unwrap(field.annotation) if field else []
        if not nxt:
            # a dict key (node name, profile name) keeps us at the dict's value model
            continue
        current = nxt
    return current[0] if current else None


def problems_from_validation(exc: ValidationError, data: Any, model: type[BaseModel],
                             loaded_file: str, lines: dict[Path_, int], prefix: Path_ = ()) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        path = prefix + data_path(data, err["loc"])
        kind = err["type"]
        if kind == "extra_forbidden":
            owner = _model_at(model, path[len(prefix):-1])
            allowed = ", ".join(owner.model_fields) if owner else "?"
            message = f"unknown key '{path[-1]}' (expected one of: {allowed})"
        elif kind == "missing":
            message = f"missing required key '{err['loc'][-1]}'"
        elif kind in _TYPE_NAMES:
            message = f"expected {_TYPE_NAMES[kind]}, got {_describe(err['input'])}"
            if kind == "string_type" and isinstance(err["input"], (int, float, datetime.date)):
                message += " (quote it)"
            elif kind == "list_type" and path[-2:-1] == ("mig_layouts",):
                message += (" (a MIG layout is a list of groups, each `gpus: all` or a list of GPU indices, and "
                            "`profiles: {<MIG profile>: <count>}`; nodes name a layout with mig_layout)")
        elif kind == "string_pattern_mismatch":
            pattern = err["ctx"]["pattern"]
            message = f"'{err['input']}' is not {PATTERN_WORDS[pattern]}" if pattern in PATTERN_WORDS else \
                f"'{err['input']}' does not match the expected form {pattern}"
        elif kind == "value_error":
            message = str(err["ctx"]["error"])
        elif kind == "literal_error":
            message = f"got {err['input']!r}; {err['msg'][0].lower()}{err['msg'][1:]}"
        else:
            message = err["msg"][0].lower() + err["msg"][1:]
        problems.append(Problem(loaded_file, line_for(lines, path), format_path(path), message))
    return problems


def _refuse_credentials(text: str, data: Any, lines: dict[Path_, int], file: str) -> None:
    """Alone and first: later messages could echo the value."""
    problems = [Problem(file, line_for(lines, path), format_path(path), credentials.message(what))
                for path, what in credentials.find_credentials(data)]
    seen = {p.line for p in problems}
    problems += [Problem(file, line, "", credentials.message(what))
                 for line, what in credentials.find_in_text(text) if line not in seen]
    if problems:
        raise InventoryError(problems)


# Rules a higher stage hands down (forge.fleet: component settings, the compute fabric), run after
# this layer's own on a well-shaped inventory, so one InventoryError lists every problem.
Rules = Callable[[LoadedInventory], list[Problem]]


def load_inventory_text(text: str, file: str, rules: Rules | None = None) -> LoadedInventory:
    """Parse and check one inventory; raises InventoryError listing every problem."""
    guards.check_size(len(text.encode("utf-8", "surrogatepass")), file)
    data, lines = parse_yaml(text, file)
    if not isinstance(data, dict):
        raise InventoryError([Problem(file, 1, "", "expected a mapping with cluster, profiles, nodes")])
    _refuse_credentials(text, data, lines, file)
    formats.check_format(data, lines, file)  # alone: an older format's problems are migrate's
    problems = check_raw(file, data, lines)
    try:
        inventory = Inventory.model_validate(data)
    except ValidationError as exc:
        raise InventoryError(problems + problems_from_validation(exc, data, Inventory, file, lines)) from None
    loaded = LoadedInventory(inventory, file, lines)
    problems += check_inventory(loaded, data)
    if rules is not None:
        problems += rules(loaded)
    if problems:
        raise InventoryError(problems)
    return loaded


def load_inventory(path: Path, display: str | None = None, rules: Rules | None = None) -> LoadedInventory:
    file = display or str(path)
    try:
        data = read_regular(path, guards.MAX_INVENTORY_BYTES)
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            guards.check_size(guards.MAX_INVENTORY_BYTES + 1, file)
        why = {errno.EINVAL: "it is not a regular file (a FIFO, a device or a socket): an inventory is a YAML file",
               errno.EISDIR: "it is a folder: an inventory is a YAML file",
               errno.ENOENT: "it does not exist (a symbolic link to nothing?)"}.get(exc.errno, exc.strerror or str(exc))
        raise InventoryError([Problem(file, 1, "", f"cannot read: {why}")]) from None
    return load_inventory_text(guards.decode(data, file), file, rules)
