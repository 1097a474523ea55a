"""The package's layering: each stage imports only from the stages before it (README, "The
pipeline"). Module-level and function-level imports count alike, TYPE_CHECKING ones too."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "generators" / "forge"

# The stages in order, written once: each folder of generators/forge/ is one stage or one subsystem,
# and a module belongs to the stage of its longest matching name (a package covers its modules).
# Every module must have a stage, so a new one is placed on purpose. docs/internals.md draws this.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    # What every stage stands on: errors, progress, workers, the CLIs forge drives (the loose
    # modules); reading and writing files; facts about hardware, pins and Kubernetes; and the
    # programs shipped whole into pods (standard library only, they import nothing of forge).
    ("foundation", ("forge", "forge.files", "forge.facts", "forge.pod_scripts")),
    ("inventory", ("forge.inventory",)),
    ("model", ("forge.model",)),
    # The alerts and sizing the components read: never a component (issues 34, 35).
    ("observability", ("forge.observability",)),
    ("components", ("forge.components",)),
    ("fleet", ("forge.fleet",)),
    # Argo CD's objects for each cluster, then the generate stage that writes them with the overlays.
    ("argocd", ("forge.argocd",)),
    ("generate", ("forge.generate",)),
    ("render", ("forge.render",)),
    # What acts on the rendered output: validate, the pinned charts and hydration, diff, node edits,
    # the engineers' Flyte code.
    ("checks", ("forge.validate", "forge.upstream", "forge.diff", "forge.nodes", "forge.workflows")),
    # `forge bench`: the stages' timings (the box's and the rollout's benches add to it).
    ("bench", ("forge.bench",)),
    # The fleet in a box: acts on what the stages before produced (render, hydrate, diff's revisions).
    ("box", ("forge.twin",)),
    # The rollout across clusters: rings, gates read from Argo CD and Prometheus, promote, ApplicationSets.
    ("rollout", ("forge.rollout",)),
    # Every command, thin, calling the stages; `python -m forge.inventory` checks a file with every
    # rule generate applies.
    ("commands", ("forge.commands", "forge.inventory.__main__")),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def stage_of(module: str) -> int:
    best = None
    for rank, (_, prefixes) in enumerate(STAGES):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[1])):
                best = (rank, prefix)
    assert best is not None, f"{module} has no stage in tests/test_layering.py: place it"
    return best[0]


def imported(path: Path, module: str) -> set[str]:
    """The forge modules `path` imports, anywhere in it: `from a import b` names module a.b when
    it is one, else a."""
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = module.split(".") if is_pkg else module.split(".")[:-1]
                base = ".".join(pkg[: len(pkg) - (node.level - 1)] + ([base] if base else []))
            out |= {f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names}
    return {m for m in out if m in MODULES and m != module}


def upward_imports() -> list[str]:
    found = []
    for module, path in MODULES.items():
        mine = stage_of(module)
        for target in sorted(imported(path, module)):
            if module.startswith(target + "."):
                continue  # a package's own __init__, loaded anyway
            if stage_of(target) > mine:
                found.append(f"{module} ({STAGES[mine][0]}) imports {target} ({STAGES[stage_of(target)][0]})")
    return found


def test_every_module_has_a_stage():
    for module in MODULES:
        stage_of(module)


def test_no_stage_imports_a_later_one():
    assert upward_imports() == []


@pytest.mark.parametrize("stage, module", [("inventory", "forge.inventory.checks"), ("model", "forge.model.cluster"),
                                           ("components", "forge.components.base")])
def test_the_check_sees_function_level_imports(tmp_path, stage, module, monkeypatch):
    """A late import inside a function (what inventory/checks.py once did to reach the component
    registry) is an upward import like any other."""
    late = tmp_path / "late.py"
    late.write_text("def rules():\n    from forge.fleet import load_fleet\n    return load_fleet\n")
    assert stage_of(module) == [name for name, _ in STAGES].index(stage)
    assert imported(late, module) == {"forge.fleet"}
    assert stage_of("forge.fleet") > stage_of(module)


def test_the_package_keeps_few_loose_modules():
    """Each folder is one stage or subsystem (issue 35): a module that sits loose beside them is
    foundation by default, so it has to earn its place; the rest go in the folder of their stage."""
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 8, f"{len(loose)} loose modules in generators/forge/: {loose}; put new ones in their stage's folder"


def test_every_folder_is_a_stage():
    """A new folder is placed in STAGES on purpose, not inherited from `forge` (foundation)."""
    named = {prefix for _, prefixes in STAGES for prefix in prefixes}
    folders = sorted(f"forge.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert [f for f in folders if f not in named] == []
