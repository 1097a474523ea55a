"""The inventory's JSON Schema (for editors) and its field reference are current, and the schema
accepts every shipped inventory and refuses what the loader refuses by shape."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from forge.commands.inventory_schema import SCHEMA_FILE, outputs
from tests.helpers import REPO, edit, inventory_text

MODELINE = "# yaml-language-server: $schema=../../docs/inventory.schema.json\n"
INVENTORIES = sorted(REPO.glob("clusters/*/inventory.yaml")) + sorted(REPO.glob("tests/fixtures/clusters/*/inventory.yaml"))


def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((REPO / SCHEMA_FILE).read_text()))


def test_committed_schema_and_reference_are_what_the_models_give():
    stale = [str(path) for path, text in outputs().items() if (REPO / path).read_text() != text]
    assert stale == [], "run `python -m forge.commands.inventory_schema` and commit the result"


@pytest.mark.parametrize("inventory", INVENTORIES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_shipped_inventory_satisfies_the_schema(inventory: Path):
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator().iter_errors(yaml.safe_load(inventory.read_text()))]
    assert errors == []


@pytest.mark.parametrize("inventory", sorted(REPO.glob("clusters/*/inventory.yaml")), ids=lambda p: p.parent.name)
def test_shipped_inventories_point_editors_at_the_schema(inventory: Path):
    assert inventory.read_text().startswith(MODELINE)


@pytest.mark.parametrize("old, new, where", [
    ("  storage_class: local-path", "  storage_clas: local-path", "cluster"),  # a typo'd key
    ("write_policy: CACHE_THROUGH", "write_policy: sync", "components.alluxio.write_policy"),
    ("kueue:\n", "kueeu:\n", "components"),
])
def test_the_schema_refuses_what_the_loader_refuses_by_shape(old, new, where):
    data = yaml.safe_load(edit(inventory_text("h200"), old, new))
    paths = {".".join(map(str, e.absolute_path)) for e in validator().iter_errors(data)}
    assert where in paths
