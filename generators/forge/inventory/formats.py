"""The inventory's format version: the top-level `format:` key, and the migrations between formats.

Every inventory states `format: N`. The loader accepts the current format only: an older one
(format 1, from before forge stated versions, has no `format:` key) is refused with a pointer to
`forge inventory migrate`, a newer or unknown one with the formats this forge supports.

A migration is one function registered with `@migration(N)`: it edits the round-trip document of
a format-N inventory (ruamel.yaml's CommentedMap, as `forge node` edits nodes, so comments and
key order survive) into format N+1; `migrate_document` runs the steps in turn and stamps each
format. The current format is one past the last migration, so a new required field is one
function here, its field in schema.py, and the shipped inventories migrated. For example:

    @migration(2)
    def _rack_power(doc):
        \"\"\"Format 3 requires cluster.power_budget_kw; format 2 had none: 0 means unknown.\"\"\"
        doc["cluster"].insert(len(doc["cluster"]), "power_budget_kw", 0)
"""
from __future__ import annotations

from typing import Any, Callable

from forge.errors import InventoryError, Problem

FORMAT_KEY = "format"
FIRST = 1  # the format before forge stated one: no `format:` key
MIGRATE_COMMAND = "forge inventory migrate"
Migration = Callable[[Any], None]
MIGRATIONS: dict[int, Migration] = {}  # format N -> the step to N+1


def migration(source: int) -> Callable[[Migration], Migration]:
    def register(step: Migration) -> Migration:
        assert source not in MIGRATIONS and source == FIRST + len(MIGRATIONS), f"migration {source} out of order"
        MIGRATIONS[source] = step
        return step

    return register


@migration(1)
def _state_the_format(doc: Any) -> None:
    """Format 2 states its version: `format: 2` becomes the document's first key."""
    block = not doc.fa.flow_style()  # a comment inside `{...}` would end the flow mapping
    doc.insert(0, FORMAT_KEY, 2, comment="the inventory's format (docs/inventory.md, \"Format versions\")" if block else None)


CURRENT = FIRST + len(MIGRATIONS)


def _older() -> str:
    return f"format {FIRST}" if CURRENT - 1 == FIRST else f"formats {FIRST} to {CURRENT - 1}"


def version_of(data: Any) -> Any:
    """The format a parsed inventory states (FIRST when it states none)."""
    return data.get(FORMAT_KEY, FIRST) if isinstance(data, dict) else FIRST


def check_format(data: dict[str, Any], lines: dict, file: str) -> None:
    """Refuse, alone and first, an inventory that is not in the current format."""
    found = data.get(FORMAT_KEY)
    if found == CURRENT and type(found) is int:
        return
    if FORMAT_KEY not in data:
        raise InventoryError([Problem(file, 1, FORMAT_KEY, (
            f"no format version: this inventory is in format {FIRST} (before forge stated versions); "
            f"run `{MIGRATE_COMMAND}` to rewrite it in format {CURRENT} (comments kept), "
            f"or add `{FORMAT_KEY}: {CURRENT}` as its first key"))])
    line = lines.get((FORMAT_KEY,), 1)
    if type(found) is int and FIRST <= found < CURRENT:
        message = f"format {found} is older than this forge reads ({CURRENT}): run `{MIGRATE_COMMAND}` to rewrite it"
    elif type(found) is int and found > CURRENT:
        message = (f"format {found} is newer than this forge knows (it reads format {CURRENT}; `{MIGRATE_COMMAND}` "
                   f"rewrites {_older()}): upgrade forge, or write the inventory in format {CURRENT}")
    else:
        message = f"got {found!r}; expected the format version {CURRENT} (a whole number: `{FORMAT_KEY}: {CURRENT}`)"
    raise InventoryError([Problem(file, line, FORMAT_KEY, message)])


def migrate_document(doc: Any, file: str) -> list[int]:
    """Bring a round-trip document to the current format in place; the formats it passed through
    (empty: already current). A version this forge cannot migrate is refused with file:line."""
    found = version_of(doc)
    if found != CURRENT:
        if type(found) is not int or not FIRST <= found < CURRENT:
            line = doc.lc.key(FORMAT_KEY)[0] + 1 if FORMAT_KEY in doc else 1
            newer = type(found) is int and found > CURRENT
            raise InventoryError([Problem(file, line, FORMAT_KEY, (
                f"got {found!r}; `{MIGRATE_COMMAND}` rewrites {_older()} into format {CURRENT}"
                + (": this one is newer than this forge, upgrade forge" if newer else "")))])
    passed = []
    while found != CURRENT:
        MIGRATIONS[found](doc)
        found += 1
        doc[FORMAT_KEY] = found
        passed.append(found)
    return passed
