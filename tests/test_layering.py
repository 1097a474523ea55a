"""The package's layering: each stage imports only from the stages before it (README, "The
pipeline"). Module-level and function-level imports count alike, TYPE_CHECKING ones too."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "generators" / "forge"

# In order; a module belongs to the stage of its longest matching name (a package covers its
# modules). Every module must have a stage, so a new one is placed on purpose.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("forge", "forge.hardware", "forge.errors", "forge.emit", "forge.paths", "forge.folders", "forge.lock",
                    "forge.tools", "forge.versions", "forge.cli_common", "forge.cache", "forge.progress",
                    "forge.workers", "forge.prereq_check", "forge.node_release", "forge.node_gate",
                    "forge.hardware_floors")),
    ("inventory", ("forge.inventory",)),
    ("model", ("forge.model", "forge.capacity", "forge.queues", "forge.day_two")),
    # The alerts and sizing the components read: never a component (issues 34, 35).
    ("observability", ("forge.observability",)),
    ("components", ("forge.components",)),
    ("fleet", ("forge.fleet",)),
    ("commands", ("forge.overrides", "forge.cluster_new", "forge.generate", "forge.handedits", "forge.current", "forge.check_output",
                  "forge.argocd", "forge.argocd_config", "forge.argocd_projects",
                  "forge.argocd_order", "forge.argocd_prereqs", "forge.writer", "forge.incremental", "forge.plan_cache", "forge.render", "forge.render_batch", "forge.bench", "forge.bench_chart", "forge.validate",
                  "forge.upstream", "forge.diff", "forge.nodes", "forge.queues_cli", "forge.inventory_schema", "forge.inventory_migrate", "forge.draw", "forge.workflows")),
    # The fleet in a box: acts on what the commands produced (render, hydrate, diff's revisions).
    ("box", ("forge.twin",)),
    # The rollout across clusters: rings, gates read from Argo CD and Prometheus, promote, ApplicationSets.
    ("rollout", ("forge.rollout",)),
    # Entry points: `python -m forge.inventory` checks a file with every rule generate applies.
    ("cli", ("forge.cli", "forge.inventory.__main__")),
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


@pytest.mark.parametrize("stage, module", [("inventory", "forge.inventory.checks"), ("model", "forge.model"),
                                           ("components", "forge.components.base")])
def test_the_check_sees_function_level_imports(tmp_path, stage, module, monkeypatch):
    """A late import inside a function (what inventory/checks.py once did to reach the component
    registry) is an upward import like any other."""
    late = tmp_path / "late.py"
    late.write_text("def rules():\n    from forge.fleet import load_fleet\n    return load_fleet\n")
    assert stage_of(module) == [name for name, _ in STAGES].index(stage)
    assert imported(late, module) == {"forge.fleet"}
    assert stage_of("forge.fleet") > stage_of(module)
