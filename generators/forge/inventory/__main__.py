"""`python -m forge.inventory FILE...`: load and check inventory files, nothing else.

The pre-commit hook runs it on the inventories a commit touches: every problem as
`file:line: path: message`, exit 2 if there is any (as `forge generate`), 130 on Ctrl-C. It does not generate or render.
"""
from __future__ import annotations

import sys
from pathlib import Path

from forge.errors import InventoryError
from forge.fleet import load_plan  # every rule generate applies: this entry point is a CLI, above the fleet stage


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m forge.inventory clusters/<cluster>/inventory.yaml ...", file=sys.stderr)
        return 2
    failed = 0
    for name in argv:
        try:
            load_plan(Path(name), name)
        except InventoryError as exc:
            failed += 1
            for line in exc.lines()[:-1]:
                print(line, file=sys.stderr)
    if failed:
        print(f"{failed} of {len(argv)} inventor{'ies' if len(argv) != 1 else 'y'} have problems", file=sys.stderr)
    return 2 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
