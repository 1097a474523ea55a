"""forge.generate.plan_cache: generate keeps each cluster's plan under its generate key, validate reuses it.
A plan is served only for the key it was loaded under; a broken file is loaded again; generate
keeps only the current keys' plans."""
from __future__ import annotations

from pathlib import Path

import pytest

from forge.generate import plan_cache
from forge.fleet import inventory_paths, load_plan
from forge.generate.incremental import cluster_keys, generate
from forge.generate.plan_cache import PLANS_DIR, plan_for

from tests.helpers import copy_repo_inputs


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return copy_repo_inputs(tmp_path / "repo")


def loads_counted(monkeypatch) -> list[str]:
    calls: list[str] = []

    def counted(path, display, folder=None):
        calls.append(display)
        return load_plan(path, display, folder=folder)

    monkeypatch.setattr(plan_cache, "load_plan", counted)
    return calls


def test_a_kept_plan_is_served_for_its_key_only(root: Path, monkeypatch):
    calls = loads_counted(monkeypatch)
    path = root / "clusters/h200/inventory.yaml"
    key = cluster_keys(root, [path])["h200"]
    first = plan_for(root, path, key)
    again = plan_for(root, path, key)
    assert calls == ["clusters/h200/inventory.yaml"]  # the second came from the file
    assert again is not first and again.name == "h200"
    assert again.cluster == first.cluster  # the same derived model, field for field
    assert [c.name for c in again.components] == [c.name for c in first.components]
    plan_for(root, path, key + "-other")  # another key (another inventory, other code): loaded again
    assert len(calls) == 2
    plan_for(root, path, None)  # no key: never from the cache
    assert len(calls) == 3


def test_an_unreadable_plan_file_is_loaded_again(root: Path, monkeypatch):
    calls = loads_counted(monkeypatch)
    path = root / "clusters/a100/inventory.yaml"
    key = cluster_keys(root, [path])["a100"]
    plan_for(root, path, key)
    [stored] = (root / PLANS_DIR).iterdir()
    stored.write_bytes(b"not a pickle")
    assert plan_for(root, path, key).name == "a100" and len(calls) == 2
    stored.write_bytes(stored.read_bytes()[:100])  # torn
    assert plan_for(root, path, key).name == "a100" and len(calls) == 3


def test_generate_keeps_the_current_plans_only(root: Path, monkeypatch):
    generate(root, jobs=1)
    kept = {p.name for p in (root / PLANS_DIR).iterdir()}
    assert len(kept) == len(inventory_paths(root)) == 3
    inventory = root / "clusters/h200/inventory.yaml"
    inventory.write_text(inventory.read_text().replace("exa.ai/pool: training", "exa.ai/pool: research", 1))
    generate(root, jobs=1)
    now = {p.name for p in (root / PLANS_DIR).iterdir()}
    assert len(now) == 3 and len(now - kept) == 1  # h200's new plan replaced its old one
    # validate then loads no inventory: every plan is there under the key it computes
    calls = loads_counted(monkeypatch)
    keys = cluster_keys(root, inventory_paths(root))
    assert all(plan_for(root, p, keys[p.parent.name]).name == p.parent.name for p in inventory_paths(root))
    assert calls == []
