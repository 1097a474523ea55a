"""Property-based fuzzing of every other data file forge reads, each through forge's own loader
for it: the rollout rings, the versions file, the chart lock, a cluster's box scenarios, an
override's Helm values and the box's pins (ci/tools.json), over structure and over bytes.

Each mutated file is accepted, or refused with a ForgeError whose every problem is
`file:line: ...` with the line inside the file (a whole-file refusal: a message naming the file);
never another exception, never a hang. FORGE_FUZZ_EXAMPLES examples per property (tests.fuzz.common).
"""
from __future__ import annotations

import copy
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from forge.facts import versions

from forge.generate import overrides
from forge.errors import ForgeError
from forge.inventory.rings import load_rings_file
from forge.twin.pins import box_pins
from forge.twin.scenario import load_scenarios
from forge.upstream.lock import read_lock
from tests.fuzz.common import FUZZ, LOAD_CPU_SECONDS, assert_refused_well, bounded, mutate, mutate_bytes
from tests.helpers import REPO

CLUSTER = "h200"
OVERRIDE = f"clusters/{CLUSTER}/overrides/gpu-operator/values.yaml"
OVERRIDE_TEXT = b"""\
# A hand-kept override, merged last into the generated values.
driver:
  enabled: true
  upgradePolicy:
    autoUpgrade: false
    maxParallelUpgrades: 1
toolkit:
  env:
    - name: CONTAINERD_CONFIG
      value: /etc/containerd/config.toml
nodeSelector: {}
"""


def _versions(root: Path) -> object:
    versions._clear()  # the versions file is cached on its size and time; each example is a new file
    return versions.versions(root)


# Each data file: its path in the repository, and forge's loader for it (given the repo root).
LOADERS: dict[str, Callable[[Path], object]] = {
    "clusters/rings.yaml": load_rings_file,
    "charts/versions.yaml": _versions,
    "charts/lock.yaml": read_lock,
    f"clusters/{CLUSTER}/scenarios.yaml": lambda root: load_scenarios(root, CLUSTER),
    OVERRIDE: lambda root: overrides.load(root, CLUSTER, {"gpu-operator": True}),
    "ci/tools.json": box_pins,
}
TEXTS = {file: OVERRIDE_TEXT if file == OVERRIDE else (REPO / file).read_bytes() for file in LOADERS}
_CLoader, _CDumper = getattr(yaml, "CSafeLoader", yaml.SafeLoader), getattr(yaml, "CSafeDumper", yaml.SafeDumper)
TREES = {file: json.loads(text) if file.endswith(".json") else yaml.load(text, Loader=_CLoader) for file, text in TEXTS.items()}
FILES = sorted(LOADERS)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A copy of every data file (the loaders read more than the one fuzzed: versions for the
    box's pins, the inventory for scenarios)."""
    root = tmp_path_factory.mktemp("fuzz-data")
    for folder in ("charts", "clusters", "ci"):
        shutil.copytree(REPO / folder, root / folder)
    return root


@pytest.fixture(autouse=True)
def _fresh_versions():
    yield
    versions._clear()


def check(workdir: Path, file: str, content: bytes) -> None:
    target = workdir / file
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    started = time.process_time()
    try:
        with bounded():
            LOADERS[file](workdir)
    except ForgeError as exc:
        assert_refused_well(exc, file, content)
        assert file in str(exc), f"a refusal that does not name {file}: {exc}"
        event(f"{file}: refused")
        return
    finally:
        target.write_bytes(TEXTS[file] if file != OVERRIDE else b"")
        if file == OVERRIDE:
            shutil.rmtree(workdir / f"clusters/{CLUSTER}/overrides")
        assert time.process_time() - started < LOAD_CPU_SECONDS
    event(f"{file}: accepted")


def dump(file: str, tree: object) -> bytes:
    if file.endswith(".json"):
        return json.dumps(tree, indent=2).encode()
    return yaml.dump(tree, Dumper=_CDumper, sort_keys=False, allow_unicode=True).encode("utf-8")


@FUZZ
@given(file=st.sampled_from(FILES), rounds=st.integers(min_value=1, max_value=4), data=st.data())
def test_data_file_structure_mutations_are_accepted_or_refused_with_file_line(workdir, file, rounds, data):
    tree = copy.deepcopy(TREES[file])
    for _ in range(rounds):
        tree = mutate(tree, data.draw)
    check(workdir, file, dump(file, tree))


@FUZZ
@given(file=st.sampled_from(FILES), rounds=st.integers(min_value=1, max_value=6), data=st.data())
def test_data_file_byte_mutations_are_accepted_or_refused_with_file_line(workdir, file, rounds, data):
    content = TEXTS[file]
    for _ in range(rounds):
        content = mutate_bytes(content, data.draw)
    check(workdir, file, content)
