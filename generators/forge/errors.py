"""Errors that reach people. The CLI catches `ForgeError` and prints its lines; anything else
is a bug and keeps its traceback."""
from __future__ import annotations

from dataclasses import dataclass


class ForgeError(Exception):
    """A problem the user can fix; `lines()` is what gets printed."""

    def lines(self) -> list[str]:
        return [str(self)]


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    line: int
    path: str  # dotted field path, with [i] for list items
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.path or '<top>'}: {self.message}"


class InventoryError(ForgeError):
    """Every problem found in one or more inventory files, reported together."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        super().__init__("\n".join(map(str, self.problems)))

    def lines(self) -> list[str]:
        n = len(self.problems)
        return [*map(str, self.problems), f"{n} problem{'s' if n != 1 else ''} in the inventory; nothing was written"]
