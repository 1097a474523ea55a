"""Read forge's own data files (the versions file, the hardware catalogue) into strict pydantic
models, reporting every problem as `file:line: key.path: message`.

This sits below `forge.inventory` (the hardware catalogue is read by the inventory schema), so it
keeps its own small YAML-with-lines builder rather than importing the inventory loader; both read
through forge.files.textguard and build within its Budget (size, encoding, line breaks, nesting, aliases).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from forge.files import textguard
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


class _Builder:
    """Plain data from composed nodes, recording the line of every key and list item, within
    textguard's Budget (an alias bomb or a self-reference is refused before it expands)."""

    def __init__(self, loader: Any, file: str, max_depth: int = textguard.MAX_NESTING_DEPTH) -> None:
        self.loader, self.file = loader, file
        self.lines: dict[Key, int] = {(): 1}
        self.dups: list[Key] = []
        self.budget = textguard.Budget(max_depth)
        self.active: dict[int, int] = {}

    def refuse(self, node: yaml.Node, message: str) -> DataFileError:
        return DataFileError([Problem(self.file, node.start_mark.line + 1, "", message)])

    def build(self, node: yaml.Node, path: Key) -> Any:
        refused = self.budget.enter(node, len(path), self.active)
        if refused:
            raise self.refuse(node, refused)
        if not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            return self.scalar(node)
        self.active[id(node)] = node.start_mark.line + 1
        out = self._mapping(node, path) if isinstance(node, yaml.MappingNode) else self._sequence(node, path)
        del self.active[id(node)]
        return out

    def _mapping(self, node: yaml.MappingNode, path: Key) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else None
            if key is None or not isinstance(key, (str, int, bool, float)):
                raise self.refuse(key_node, "a key must be plain text, not a list, a mapping or nothing")
            here = path + (key,)
            if key in out:
                self.dups.append(here)
            self.lines[here] = key_node.start_mark.line + 1
            out[key] = self.build(value_node, here)
        return out

    def _sequence(self, node: yaml.SequenceNode, path: Key) -> list[Any]:
        items = []
        for index, item in enumerate(node.value):
            self.lines[path + (index,)] = item.start_mark.line + 1
            items.append(self.build(item, path + (index,)))
        return items

    def scalar(self, node: yaml.Node) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.MarkedYAMLError:
            raise
        except Exception as exc:  # a bad explicit tag (`!!int x`) or a number of thousands of digits
            reason = "it has thousands of digits" if "digits" in str(exc) else str(exc).splitlines()[0][:80]
            raise self.refuse(node, f"cannot read {str(node.value)[:40]!r} as {node.tag.rsplit(':', 1)[-1]}: {reason}") from None


def _yaml_error(exc: yaml.YAMLError, text: str, file: str) -> DataFileError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = min(mark.line + 1, text.count("\n") + 1) if mark else 1
    return DataFileError([Problem(file, line, "", f"not valid YAML: {getattr(exc, 'problem', None) or exc}")])


def _guarded(text: str, file: str) -> Any:
    textguard.check_printable(text, file, DataFileError)
    textguard.check_line_breaks(text, file, DataFileError)
    return _Loader(text)


def parse(text: str, file: str, max_depth: int = textguard.MAX_NESTING_DEPTH) -> tuple[Any, dict[Key, int]]:
    """One YAML document of `text`, with the line of every key and list item."""
    loader = _guarded(text, file)
    try:
        node = loader.get_single_node()
        builder = _Builder(loader, file, max_depth)
        data = builder.build(node, ()) if node is not None else None
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, text, file) from None
    finally:
        loader.dispose()
    if builder.dups:
        raise DataFileError([Problem(file, builder.lines[k], dotted(k), "key given twice: YAML keeps only the last")
                             for k in builder.dups])
    return data, builder.lines


def parse_all(text: str, file: str, max_depth: int = textguard.MAX_NESTING_DEPTH) -> list[Any]:
    """Every document of a YAML stream (Kubernetes manifests), within the same guards."""
    return [doc for doc, _ in parse_all_lines(text, file, max_depth)]


def parse_all_lines(text: str, file: str, max_depth: int = textguard.MAX_NESTING_DEPTH) -> list[tuple[Any, dict[Key, int]]]:
    """parse_all, each document with the line (in `text`) of every key and list item."""
    loader = _guarded(text, file)
    docs = []
    try:
        while loader.check_node():
            builder, node = _Builder(loader, file, max_depth), loader.get_node()
            builder.lines[()] = node.start_mark.line + 1
            docs.append((builder.build(node, ()), builder.lines))
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, text, file) from None
    finally:
        loader.dispose()
    return docs


def read(path: Path, file: str, root: Path | None = None, what: str = "a YAML file") -> str:
    """The text of one of forge's files, through textguard's reader (errors: DataFileError)."""
    return textguard.read_text(path, file, root=root, what=what, error=DataFileError)


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
         rules: Callable[[M], Iterable[tuple[Key, str]]] | None = None, root: Path | None = None) -> M:
    """`path` validated as `model`, then `rules` (problems that span keys, by key path); `file`
    is how errors name it (relative to the repo); with `root`, a link out of it is refused."""
    data, lines = parse(read(path, file, root), file)
    try:
        result = model.model_validate(data)
    except ValidationError as exc:
        raise DataFileError(problems(exc, data, lines, file)) from None
    found = [Problem(file, line_of(lines, at), dotted(at), message) for at, message in (rules(result) if rules else ())]
    if found:
        raise DataFileError(found)
    return result
