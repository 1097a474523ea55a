"""Fixtures of the fleet-in-a-box tests: the programs (built once into the cache outside the repo,
which takes the better part of half an hour cold; `make twin` in CI has built them by the time the
tests run), a rendered repo copy, and boxes that live as long as the test module."""
from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from forge.fleet import load_fleet
from forge.render.overlays import render_all
from forge.twin.binaries import ensure_binaries
from forge.twin.box import box_syncer, running_box
from forge.twin.kube import connect
from forge.twin.pins import argocd_crds_dir, box_pins
from forge.twin.pki import Pki
from forge.twin.sources import applications
from tests.helpers import REPO, git_repo_copy


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@pytest.fixture(scope="session")
def box_programs(upstream) -> dict[str, Path]:
    return ensure_binaries(REPO, box_pins(REPO), say)


def rendered_copy(tmp_path_factory) -> Path:
    root = git_repo_copy(tmp_path_factory.mktemp("twin") / "repo")
    render_all(root)
    return root


@pytest.fixture(scope="module")
def fleet_copy(tmp_path_factory, box_programs) -> Path:
    """A rendered copy of the repo for this module's own boxes (`forge twin up` and the like)."""
    return rendered_copy(tmp_path_factory)


class Boxes:
    """Boxes by cluster, each started on first use and stopped when the module's tests are done."""

    def __init__(self, root: Path, upstream: Path) -> None:
        self.root, self.upstream = root, upstream
        self.stack = ExitStack()
        self.open: dict[str, tuple] = {}

    def get(self, cluster: str):
        if cluster not in self.open:
            plan = next(p for p in load_fleet(self.root) if p.name == cluster)
            state = self.stack.enter_context(running_box(self.root, plan, self.upstream, say))
            pki = Pki(self.root / "build" / "twin" / cluster / "pki")
            kube = connect(state.server, pki.token(), pki.ca)
            syncer = box_syncer(kube, state, plan, say)
            report = syncer.sync(applications(self.root, plan, self.upstream, argocd_crds_dir(self.root, self.upstream)))
            self.open[cluster] = (plan, kube, state, report)
        return self.open[cluster]


@pytest.fixture(scope="session")
def boxes(tmp_path_factory, box_programs, upstream):
    """The shipped fleets' boxes, with everything applied, shared by every test of the session that
    only reads them or cleans up after itself (scenarios do)."""
    found = Boxes(rendered_copy(tmp_path_factory), upstream)
    with found.stack:
        yield found


def still_running(pids: list[int]) -> list[int]:
    """The pids that still run (a zombie counts as gone: it runs nothing)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


@pytest.fixture
def twin_env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}
