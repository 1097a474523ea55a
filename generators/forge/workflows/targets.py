"""`workflows/targets.yaml`: where each example runs, the cluster and the project-domain a
`pyflyte run --remote --project P --domain D FILE WORKFLOW` would start it in."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from forge.files import datafile
from forge.errors import ForgeError

WORKFLOWS_DIR = "workflows"
TARGETS_FILE = "targets.yaml"
Name = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)]


class Target(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    file: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*\.py$")]  # a module in workflows/
    workflow: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    cluster: Name
    project: Name
    domain: Name

    @property
    def module(self) -> str:
        return self.file[:-3]

    @property
    def workflow_name(self) -> str:
        return f"{self.module}.{self.workflow}"  # flytekit's name of a workflow: module.function

    @property
    def namespace(self) -> str:
        return f"{self.project}-{self.domain}"


class TargetFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    targets: Annotated[list[Target], Field(min_length=1)]


def _rules(model: TargetFile):
    seen: dict[tuple[str, ...], int] = {}
    for i, t in enumerate(model.targets):
        key = (t.file, t.workflow, t.cluster, t.namespace)
        if key in seen:
            yield ("targets", i), f"{t.file} {t.workflow} on {t.cluster} in {t.namespace} is listed twice (also targets[{seen[key]}])"
        seen.setdefault(key, i)


def load_targets(root: Path) -> list[Target]:
    path = root / WORKFLOWS_DIR / TARGETS_FILE
    shown = f"{WORKFLOWS_DIR}/{TARGETS_FILE}"
    if not path.is_file():
        raise ForgeError(f"{shown}: no such file: it says where each example in {WORKFLOWS_DIR}/ runs (docs/workflows.md)")
    targets = datafile.load(path, TargetFile, shown, _rules).targets
    missing = sorted({t.file for t in targets if not (root / WORKFLOWS_DIR / t.file).is_file()})
    if missing:
        raise ForgeError(f"{shown}: no such file in {WORKFLOWS_DIR}/: {', '.join(missing)}")
    return targets
