"""`forge workflows check`: compile workflows/ with flytekit and judge every task of every target."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forge.errors import ForgeError
from forge.fleet import load_fleet
from forge.workflows.compile import compile_workflows
from forge.workflows.judge import Platform, judge, pinned_images
from forge.workflows.targets import WORKFLOWS_DIR, load_targets


@dataclass(frozen=True)
class Verdict:
    checked: int  # (target, task) pairs
    problems: list[str]


def check(root: Path) -> Verdict:
    targets = load_targets(root)
    fleet = {p.cluster.name: p for p in load_fleet(root)}
    unknown = sorted({t.cluster for t in targets} - set(fleet))
    if unknown:
        raise ForgeError(f"{WORKFLOWS_DIR}/targets.yaml: no cluster {', '.join(unknown)} (have: {', '.join(sorted(fleet))})")
    compiled = compile_workflows(root, [t.module for t in targets])
    platforms = {name: Platform.of(fleet[name]) for name in sorted({t.cluster for t in targets})}
    images, problems, checked = pinned_images(), [], 0
    for t in targets:
        for task in compiled.tasks_of(t):
            checked += 1
            for field, problem in judge(task, t, platforms[t.cluster], images):
                problems.append(f"{WORKFLOWS_DIR}/{t.file}: task {task.name} on cluster {t.cluster} ({t.namespace}): {field}: {problem}")
    return Verdict(checked, problems)
