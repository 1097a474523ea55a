"""Property-based fuzzing of the inventory loader, over structure and over bytes.

Every mutated inventory is either rejected with `InventoryError` whose every problem is
`file:line: path: message` with a line inside the file, or accepted; the first accepted ones are
then generated (`build_tree`: model, components, bootstrap) and must generate or be rejected the
same way. Never another exception, never a hang (a deadline per example).

Each property runs FORGE_FUZZ_EXAMPLES examples (default 100: a few hundred per test run);
`make fuzz` runs 10,000. FORGE_FUZZ_GENERATE bounds how many accepted inputs are generated
(about a second each).
"""
from __future__ import annotations

import copy
import os
import shutil
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from forge.errors import ForgeError, InventoryError
from forge.fleet import load_plan
from forge.generate.tree import build_tree
from tests.fuzz.common import FUZZ, LOAD_CPU_SECONDS, assert_refused_well, bounded, mutate, mutate_bytes
from tests.helpers import CLUSTERS as SHIPPED_CLUSTERS, REPO

GENERATE = int(os.environ.get("FORGE_FUZZ_GENERATE", "1"))
TEXTS = {name: (REPO / "clusters" / name / "inventory.yaml").read_bytes() for name in SHIPPED_CLUSTERS}
_CLoader, _CDumper = getattr(yaml, "CSafeLoader", yaml.SafeLoader), getattr(yaml, "CSafeDumper", yaml.SafeDumper)
TREES = {name: yaml.load(text, Loader=_CLoader) for name, text in TEXTS.items()}
generated = {"count": 0}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(REPO / "base", root / "base")
    shutil.copytree(REPO / "charts", root / "charts")
    return root


def check(workdir: Path, cluster: str, content: bytes) -> None:
    file = f"clusters/{cluster}/inventory.yaml"
    shutil.rmtree(workdir / "clusters", ignore_errors=True)
    (workdir / file).parent.mkdir(parents=True)
    (workdir / file).write_bytes(content)
    started = time.process_time()
    try:
        with bounded():
            load_plan(workdir / file, file, folder=cluster)  # the loader with the fleet stage's rules
    except InventoryError as exc:
        assert_refused_well(exc, file, content)
        event("refused by the loader")
        return
    finally:
        assert time.process_time() - started < LOAD_CPU_SECONDS
    event("accepted by the loader")
    if generated["count"] >= GENERATE:
        return
    generated["count"] += 1
    try:
        with bounded():
            tree = build_tree(workdir)
    except ForgeError as exc:  # rules of the whole fleet (a folder name, settings for a component that is off)
        assert_refused_well(exc, file, content)
        return
    assert any(path.startswith(f"overlays/{cluster}/") for path in tree.files) or not tree.files


# ---- structure: the parsed inventory, with keys and values dropped, duplicated or replaced -----

@FUZZ
@given(cluster=st.sampled_from(SHIPPED_CLUSTERS), rounds=st.integers(min_value=1, max_value=4), data=st.data())
def test_structure_mutations_are_accepted_or_refused_with_file_line(workdir, cluster, rounds, data):
    tree = copy.deepcopy(TREES[cluster])
    for _ in range(rounds):
        tree = mutate(tree, data.draw)
    check(workdir, cluster, yaml.dump(tree, Dumper=_CDumper, sort_keys=False, allow_unicode=True).encode("utf-8"))


# ---- bytes: the file's text with bytes, tokens and lines inserted, deleted or swapped ---------

@FUZZ
@given(cluster=st.sampled_from(SHIPPED_CLUSTERS), rounds=st.integers(min_value=1, max_value=6), data=st.data())
def test_byte_mutations_are_accepted_or_refused_with_file_line(workdir, cluster, rounds, data):
    content = TEXTS[cluster]
    for _ in range(rounds):
        content = mutate_bytes(content, data.draw)
    check(workdir, cluster, content)
