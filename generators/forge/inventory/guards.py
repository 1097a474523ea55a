"""The inventory's guards: forge.files.textguard's reader and budget, with the inventory's size message."""
from __future__ import annotations

from forge.files.textguard import (  # noqa: F401  (the inventory's names for the shared guards)
    MAX_ALIAS_EXPANSION, MAX_ALIASES, MAX_INVENTORY_BYTES, MAX_NESTING_DEPTH, Budget, check_line_breaks,
    check_printable, check_size, decode,
)
