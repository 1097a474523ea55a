"""Read inventory YAML keeping line numbers, validate its shape and rules, report every problem.

The YAML is composed into nodes (which know their lines), then built into plain Python values
(so pydantic's strict mode sees real ints and strs) alongside a map from field path to line,
which turns every error into `file:line: path: message`.
"""
from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ValidationError
import yaml

from forge.errors import InventoryError, Problem
from forge.inventory.checks import check_inventory, check_raw  # rules that span fields
from forge.inventory.located import LoadedInventory, Path_, format_path, line_for
from forge.inventory.schema import Inventory

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _plain(loader: Any, node: yaml.Node, path: Path_, lines: dict[Path_, int], dups: list[Problem], file: str) -> Any:
    """Build plain data from composed nodes, recording each key's and item's line."""
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            here = path + (key,)
            if key in out:
                dups.append(Problem(file, key_node.start_mark.line + 1, format_path(here),
                                    f"duplicate key '{key}' (first at line {lines[here]}): YAML keeps only the last"))
                continue
            lines[here] = key_node.start_mark.line + 1
            out[key] = _plain(loader, value_node, here, lines, dups, file)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, item in enumerate(node.value):
            lines[path + (index,)] = item.start_mark.line + 1
            items.append(_plain(loader, item, path + (index,), lines, dups, file))
        return items
    return loader.construct_object(node, deep=True)


def parse_yaml(text: str, file: str) -> tuple[Any, dict[Path_, int]]:
    """Parse with PyYAML's C parser (ruamel's pure-Python round trip is ~20x slower on a large
    fleet), keeping the line of every key and list item. Duplicate keys are errors, not silence."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        lines: dict[Path_, int] = {(): 1}
        dups: list[Problem] = []
        data = _plain(loader, node, (), lines, dups, file) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        message = f"not valid YAML: {exc.problem or exc}"
        if exc.context and exc.context_mark and exc.context_mark.line + 1 != line:
            message += f" ({exc.context.strip()} at line {exc.context_mark.line + 1})"
        raise InventoryError([Problem(file, line, "", message)]) from None
    finally:
        loader.dispose()
    if dups:
        raise InventoryError(dups)
    return data, lines


_TYPE_NAMES = {
    "string_type": "a string", "int_type": "an integer", "bool_type": "true or false",
    "float_type": "a number", "dict_type": "a mapping", "list_type": "a list",
    "model_type": "a mapping", "model_attributes_type": "a mapping", "int_from_float": "an integer",
}


def _describe(value: Any) -> str:
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", dict: "mapping",
            list: "list", type(None): "nothing"}.get(type(value), type(value).__name__)
    shown = "" if isinstance(value, (dict, list)) or value is None else f" {value!r}"
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


def _data_path(data: Any, loc: tuple) -> Path_:
    """Pydantic's error location, minus its union/validator tags that are not in the data."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            path.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            path.append(part)
            node = node[part]
        elif isinstance(node, dict) and isinstance(part, str) and part.isidentifier():
            path.append(part)  # a missing key; union and key tags are never identifiers
            node = None
    return tuple(path)


def problems_from_validation(exc: ValidationError, data: Any, model: type[BaseModel],
                             loaded_file: str, lines: dict[Path_, int], prefix: Path_ = ()) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        path = prefix + _data_path(data, err["loc"])
        kind = err["type"]
        if kind == "extra_forbidden":
            owner = _model_at(model, path[len(prefix):-1])
            allowed = ", ".join(owner.model_fields) if owner else "?"
            message = f"unknown key '{path[-1]}' (expected one of: {allowed})"
        elif kind == "missing":
            message = f"missing required key '{err['loc'][-1]}'"
        elif kind in _TYPE_NAMES:
            message = f"expected {_TYPE_NAMES[kind]}, got {_describe(err['input'])}"
            if kind == "string_type" and isinstance(err["input"], (int, float)):
                message += " (quote it)"
        elif kind == "string_pattern_mismatch":
            message = f"'{err['input']}' does not match the expected form {err['ctx']['pattern']}"
        elif kind == "value_error":
            message = str(err["ctx"]["error"])
        elif kind == "literal_error":
            message = f"got {err['input']!r}; {err['msg'][0].lower()}{err['msg'][1:]}"
        else:
            message = err["msg"][0].lower() + err["msg"][1:]
        problems.append(Problem(loaded_file, line_for(lines, path), format_path(path), message))
    return problems


# Rules a higher stage hands down (forge.fleet: component settings, the compute fabric), run after
# this layer's own on a well-shaped inventory, so one InventoryError lists every problem.
Rules = Callable[[LoadedInventory], list[Problem]]


def load_inventory_text(text: str, file: str, rules: Rules | None = None) -> LoadedInventory:
    """Parse and check one inventory; raises InventoryError listing every problem."""
    data, lines = parse_yaml(text, file)
    if not isinstance(data, dict):
        raise InventoryError([Problem(file, 1, "", "expected a mapping with cluster, profiles, nodes")])
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
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InventoryError([Problem(display or str(path), 1, "", f"cannot read: {exc.strerror}")]) from None
    return load_inventory_text(text, display or str(path), rules)
