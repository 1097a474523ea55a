"""Issue 15's table of hostile and broken inventories, run through `forge generate` as a user would.

Every case: exit 2, a `file:line:` message that says in words what is wrong and what is allowed,
no traceback, and not one byte of the repository written. Each case edits the shipped H200
inventory of a fresh copy of the repository; line numbers are computed from the edited text.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from forge.inventory.guards import MAX_INVENTORY_BYTES
from tests.helpers import REPO, copy_repo_inputs

FILE = "clusters/h200/inventory.yaml"


@dataclass(frozen=True)
class Case:
    id: str
    edit: Callable[[str], str | bytes]  # the shipped inventory's text -> the hostile file content
    line: Callable[[str | bytes], int]  # the line the error must name, from the hostile content
    words: tuple[str, ...]  # what the message must say
    seconds: float = 60  # it must be refused well within this (a guard that failed would run for minutes or exhaust memory; the machine may be loaded)
    file: str = "clusters/h200/inventory.yaml"  # the file the first error names
    prepare: Callable[[Path], None] = lambda repo: None  # other edits to the repository


def line_of(needle: str | bytes, nth: int = 1) -> Callable[[str | bytes], int]:
    def find(content: str | bytes) -> int:
        pos = -1
        for _ in range(nth):
            pos = content.index(needle, pos + 1)
        return content.count(b"\n" if isinstance(content, bytes) else "\n", 0, pos) + 1

    return find


def replace(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, f"the shipped inventory changed: {old!r} not found"
        return text.replace(old, new, 1)

    return edit


BOMB = "bomb:\n  a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10))
KEY = "AKIA" + "IOSFODNN7EXAMPLE"  # AWS's documented example key id, split so no scanner flags this file
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----"

CASES = [
    Case("binary file", lambda t: b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)) * 4, lambda c: 1,
         ("byte 0x89 at offset 0", "is not UTF-8", "binary file")),
    Case("one undecodable byte", lambda t: t.replace("region: us-west-2", "region: us-w\xe9st-2", 1).encode("latin-1"),
         line_of(b"region: us-w"), ("byte 0xe9 at offset", "is not UTF-8", "re-save the file as UTF-8")),
    Case("NUL character", replace("region: us-west-2", "region: us-\0west-2"), line_of("region: us-"),
         ("U+0000 (NUL)", "printable characters, tabs and line breaks only")),
    # YAML counts a lone CR as a line break, editors and git do not: every later line number
    # would be off by one (found by `make fuzz`: `#\r key:` reported at line 2 of a 1-line file).
    Case("carriage return without a line feed", replace("region: us-west-2\n", "region: us-west-2\r"), line_of("region: us-west-2"),
         ("U+000D (CARRIAGE RETURN without a line feed)", "save the file with LF (or CRLF) line endings")),
    Case("escape character", replace("project: forge-h200", "project: forge-\x1b[1mh200"), line_of("project: forge-"),
         ("U+001B", "is not allowed")),
    # Each level multiplies by 9: level 3 passes the 1,000 alias uses (guards.MAX_ALIASES).
    Case("alias bomb", lambda t: t + BOMB, line_of("  a3: &a3"), ("bomb.a3: aliases expand to too much", "write the values out"), 30),
    Case("self-referencing alias", lambda t: t + "loop: &x [*x]\n", line_of("loop:"),
         ("alias refers to the block that contains it", "copy the values")),
    Case("GPU count 10**23", replace("count: 8, nvlink", "count: 100000000000000000000000, nvlink"),
         line_of("count: 100000000000000000000000"), ("profiles.sr680a-h200.gpu.count", "more than the GPUs any server takes (at most 16)"), 10),
    Case("memory_gib 10**20", replace("memory_gib: 2048", "memory_gib: 100000000000000000000"), line_of("memory_gib: 1000"),
         ("profiles.sr680a-h200.memory_gib", "more than the memory of any server", "at most 32,768")),
    Case("kubernetes_version 1.99", replace('kubernetes_version: "1.34"', 'kubernetes_version: "1.99"'), line_of("kubernetes_version"),
         ("cluster.kubernetes_version", "'1.99' has no schemas", "expected one of:", "1.34")),
    Case("access key in the S3 endpoint", replace("endpoint: https://", f"endpoint: https://{KEY}:wJalrXUtnFEMIK7MDENG@"),
         line_of("endpoint:"), ("cluster.s3.endpoint", "looks like", "Kubernetes Secret", "credentials_secret")),
    Case("password in a URL", replace("endpoint: https://", "endpoint: https://admin:hunter2@"),
         line_of("endpoint:"), ("cluster.s3.endpoint", "a URL with a password in it")),
    Case("access key as a label value", replace("exa.ai/pool: training", f"exa.ai/pool: {KEY}"), line_of(KEY),
         ("nodes[3].labels.exa.ai/pool", "an AWS access key id", "Secret")),
    Case("secret under a password key", replace("region: us-west-2", "region: us-west-2\n    password: Tr0ub4dor&3xkcd"),
         line_of("password:"), ("cluster.s3.password", "a secret under the key 'password'")),
    Case("private key in a comment", lambda t: t.replace("# Hardware", f"# {PEM}\n# Hardware", 1), line_of(PEM),
         ("a PEM private key",)),
    Case("50 MB inventory", lambda t: t + "# padding\n" * (50 * 2**20 // 10), lambda c: 1,
         (f"an inventory may be at most {MAX_INVENTORY_BYTES // 2**20} MiB", "is this the right file"), 30),
    Case("rack with a space", replace("rack: h200-r01", "rack: h200 r01"), line_of("rack: h200 r01"),
         ("nodes[0].rack", "names are DNS labels: lower-case letters, digits and '-', at most 63 characters", "did you mean 'h200-r01'?")),
    Case("upper-case node name", replace("name: h200-gpu-01", "name: H200-GPU-01"), line_of("name: H200-GPU-01"),
         ("nodes[3].name", "names are DNS labels", "did you mean 'h200-gpu-01'?")),
    Case("emoji node name", replace("name: h200-gpu-01", "name: h200-gpu-\U0001F680"), line_of("name: h200-gpu-\U0001F680"),
         ("nodes[3].name", "names are DNS labels")),
    Case("MIG profile where a layout is expected", replace("mig_layout: all-1g", "mig_layout: 1g.18gb"), line_of("mig_layout: 1g.18gb"),
         ("mig_layout", "is a MIG profile", "name a layout defined under cluster.mig_layouts")),
    Case("MIG profile name as a layout's definition", replace("    all-1g:\n      - gpus: all\n        profiles: {1g.18gb: 7}", "    all-1g: 1g.18gb"),
         line_of("all-1g: 1g.18gb"), ("cluster.mig_layouts.all-1g: expected a list, got string '1g.18gb'", "a MIG layout is a list of groups")),
]

def hand_made_file(repo: Path) -> None:
    (repo / "clusters/b200/argocd").mkdir(parents=True)
    (repo / "clusters/b200/argocd/x.yaml").write_text("kind: ConfigMap\n")


# Rows of the table that the fleet stage (forge.fleet) rejects, across inventories and folders.
FLEET_CASES = [
    Case("the same node name in both clusters", replace("name: h200-gpu-01", "name: a100-gpu-01"), line_of("name: a100-gpu-01"),
         ("nodes[3].name: node 'a100-gpu-01' is also in cluster 'a100' (clusters/a100/inventory.yaml:", "a node belongs to one cluster")),
    Case("clusters/b200/ holding no inventory", lambda t: t, lambda c: 1,
         ("missing, but clusters/b200/ holds argocd/x.yaml", "restore clusters/b200/inventory.yaml"),
         file="clusters/b200/inventory.yaml", prepare=hand_made_file),
    Case("components.scheduling.priority_classes: 5", lambda t: re.sub(r"(  scheduling:\n    priority_classes:)\n(      - .*\n)+", r"\1 5\n", t, count=1),
         line_of("priority_classes: 5"), ("components.scheduling.priority_classes: expected a list, got integer 5",)),
]


def snapshot(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def generated_repo(tmp_path_factory) -> Path:
    """Inputs plus the committed generated tree: a refused run must leave that tree as it was."""
    repo = copy_repo_inputs(tmp_path_factory.mktemp("shipped") / "repo")
    shutil.copytree(REPO / "overlays", repo / "overlays")
    for argocd in (REPO / "clusters").glob("*/argocd"):
        shutil.copytree(argocd, repo / argocd.relative_to(REPO))
    return repo


@pytest.mark.parametrize("case", CASES + FLEET_CASES, ids=lambda c: c.id)
def test_hostile_inventory_is_refused_with_file_line(case: Case, generated_repo: Path, tmp_path: Path):
    repo = tmp_path / "repo"
    shutil.copytree(generated_repo, repo)
    case.prepare(repo)
    content = case.edit((repo / FILE).read_text(encoding="utf-8"))
    if isinstance(content, str):
        (repo / FILE).write_text(content, encoding="utf-8")
    else:
        (repo / FILE).write_bytes(content)
    before = snapshot(repo)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p.endswith("generators"))}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "forge.commands.main", "generate", "--root", str(repo)],
                          capture_output=True, text=True, env=env, timeout=120)
    seconds = time.perf_counter() - started
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"error: {case.file}:{case.line(content)}: "), proc.stderr[:2000]
    for words in case.words:
        assert words in proc.stderr, f"{words!r} not in:\n{proc.stderr[:2000]}"
    assert proc.stderr.rstrip().endswith("in the inventory; nothing was written")
    assert snapshot(repo) == before
    assert seconds < case.seconds, f"took {seconds:.1f}s"


def test_credentials_are_never_echoed(generated_repo: Path, tmp_path: Path):
    repo = tmp_path / "repo"
    shutil.copytree(generated_repo, repo)
    text = (repo / FILE).read_text().replace("exa.ai/pool: training", f"exa.ai/pool: {KEY}", 1)
    (repo / FILE).write_text(text.replace("endpoint: https://", "endpoint: https://admin:hunter2@", 1))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p.endswith("generators"))}
    proc = subprocess.run([sys.executable, "-m", "forge.commands.main", "generate", "--root", str(repo)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("looks like") == 2
    assert KEY not in proc.stderr and "hunter2" not in proc.stderr


def test_allowed_kubernetes_versions_are_those_validate_has_schemas_for():
    from forge.inventory.schema import kubernetes_versions
    from forge.validate.kube import available_versions

    assert list(kubernetes_versions()) == available_versions() and "1.34" in kubernetes_versions()
