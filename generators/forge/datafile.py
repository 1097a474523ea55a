"""Read forge's own data files (the versions file, the hardware catalogue) into strict pydantic
models, reporting every problem as `file:line: key.path: message`.

This sits below `forge.inventory` (the hardware catalogue is read by the inventory schema), so it
keeps its own small YAML-with-lines reader rather than importing the inventory loader.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from forge.errors import ForgeError, Problem

M = TypeVar("M", bound=BaseModel)
Key = tuple[str | int, ...]

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DataFileError(ForgeError):
    """Every problem found in one of forge's data files."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        super().__init__("\n".join(map(str, self.problems)))

    def lines(self) -> list[str]:
        files = ", ".join(sorted({p.file for p in self.problems}))
        n = len(self.problems)
        return [*map(str, self.problems), f"{n} problem{'s' if n != 1 else ''} in {files}; nothing was written"]


def dotted(path: Key) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _plain(loader: Any, node: yaml.Node, path: Key, lines: dict[Key, int], dups: list[Key]) -> Any:
    """Plain data from composed nodes, recording the line of every key and list item."""
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            here = path + (key,)
            if key in out:
                dups.append(here)
            lines[here] = key_node.start_mark.line + 1
            out[key] = _plain(loader, value_node, here, lines, dups)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, item in enumerate(node.value):
            lines[path + (index,)] = item.start_mark.line + 1
            items.append(_plain(loader, item, path + (index,), lines, dups))
        return items
    return loader.construct_object(node, deep=True)


def parse(text: str, file: str) -> tuple[Any, dict[Key, int]]:
    loader = _Loader(text)
    lines: dict[Key, int] = {(): 1}
    dups: list[Key] = []
    try:
        node = loader.get_single_node()
        data = _plain(loader, node, (), lines, dups) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise DataFileError([Problem(file, mark.line + 1 if mark else 1, "", f"not valid YAML: {exc.problem or exc}")]) from None
    finally:
        loader.dispose()
    if dups:
        raise DataFileError([Problem(file, lines[k], dotted(k), "key given twice: YAML keeps only the last") for k in dups])
    return data, lines


def line_of(lines: dict[Key, int], path: Key) -> int:
    """The line of the deepest part of `path` the file has (a missing key: its parent's)."""
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return 1


def _message(err: Any) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "missing required key"
    if kind == "value_error":
        return str(err["ctx"]["error"])
    message = err["msg"][0].lower() + err["msg"][1:]
    if kind == "string_type" and isinstance(err["input"], (int, float)):
        message += f", got {err['input']!r} (quote it)"
    return message


def data_path(data: Any, loc: tuple) -> Key:
    """Pydantic's location, minus the tags it adds that are not keys of the data."""
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
            path.append(part)  # a missing key (validator and union tags are never identifiers)
            node = None
    return tuple(path)


def problems(exc: ValidationError, data: Any, lines: dict[Key, int], file: str) -> list[Problem]:
    out = []
    for err in exc.errors(include_url=False):
        path = data_path(data, err["loc"])
        out.append(Problem(file, line_of(lines, path), dotted(path), _message(err)))
    return out


def load(path: Path, model: type[M], file: str,
         rules: Callable[[M], Iterable[tuple[Key, str]]] | None = None) -> M:
    """`path` validated as `model`, then `rules` (problems that span keys, by key path); `file`
    is how errors name it (relative to the repo)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataFileError([Problem(file, 1, "", f"cannot read it ({exc.strerror})")]) from None
    data, lines = parse(text, file)
    try:
        result = model.model_validate(data)
    except ValidationError as exc:
        raise DataFileError(problems(exc, data, lines, file)) from None
    found = [Problem(file, line_of(lines, at), dotted(at), message) for at, message in (rules(result) if rules else ())]
    if found:
        raise DataFileError(found)
    return result
