"""Compile `workflows/` with the real flytekit in a child process (forge.workflows.serialize) and
read every task as propeller would (forge.workflows.tasks)."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from forge.errors import ForgeError
from forge.workflows.targets import WORKFLOWS_DIR, Target
from forge.workflows.tasks import CompiledTask, read_task

TIMEOUT_SECONDS = 600  # importing flytekit and Ray is seconds; a module that hangs is the user's bug, bounded


@dataclass(frozen=True)
class Compiled:
    tasks: dict[str, CompiledTask]
    workflows: dict[str, list[str]]  # workflow name -> its tasks' names

    def tasks_of(self, target: Target) -> list[CompiledTask]:
        if target.workflow_name not in self.workflows:
            have = ", ".join(sorted(w.split(".", 1)[1] for w in self.workflows if w.startswith(f"{target.module}.")))
            raise ForgeError(f"{WORKFLOWS_DIR}/{target.file}: no workflow {target.workflow!r} (have: {have or 'none'})")
        return [self.tasks[n] for n in self.workflows[target.workflow_name]]


def compile_workflows(root: Path, modules: list[str]) -> Compiled:
    folder = root / WORKFLOWS_DIR
    try:
        done = subprocess.run([sys.executable, "-m", "forge.workflows.serialize", str(folder), *sorted(set(modules))],
                              capture_output=True, text=True, timeout=TIMEOUT_SECONDS, cwd=folder)
    except subprocess.TimeoutExpired:
        raise ForgeError(f"{WORKFLOWS_DIR}/: compiling took over {TIMEOUT_SECONDS} s (does a module run work when imported?)") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no error message"])[-1]
        if "No module named 'flytekit'" in done.stderr:
            last = "flytekit is not installed in forge's environment (make setup installs requirements.lock)"
        raise ForgeError(f"{WORKFLOWS_DIR}/{last}" if done.returncode == 3 else f"{WORKFLOWS_DIR}/: cannot be compiled: {last}")
    data = json.loads(done.stdout)
    return Compiled({n: read_task(n, t) for n, t in data["tasks"].items()}, data["workflows"])
