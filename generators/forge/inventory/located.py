"""Where an inventory's fields are: the typed inventory with the line of every field, and the
`file:line: path` of a problem. Both the loader and the checks use it (neither imports the other's
way round: loader -> checks -> located)."""
from __future__ import annotations

from dataclasses import dataclass

from forge.errors import Problem
from forge.inventory.schema import Inventory

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class LoadedInventory:
    inventory: Inventory
    file: str  # as given, relative to the repo when possible: it appears in errors and headers
    lines: dict[Path_, int]

    def line_of(self, path: Path_) -> int:
        return line_for(self.lines, path)

    def problem(self, path: Path_, message: str) -> Problem:
        return Problem(self.file, self.line_of(path), format_path(path), message)


def format_path(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def line_for(lines: dict[Path_, int], path: Path_) -> int:
    """The line of the deepest part of `path` the document has (a missing key: its parent)."""
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return 1
