"""render and validate refuse a tree that is not current (issue 24's third wall): overlays older
than the inventories or overrides, build/rendered/ older than the overlays. One line, exit 2,
naming the command to run; real kustomize for the renders."""
from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers import forge


def run(root: Path, *args: str):
    return forge(root, *args)


def one_error(result) -> str:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def test_render_and_validate_refuse_stale_trees(repo_inputs: Path, kustomize, monkeypatch):
    monkeypatch.setenv("FORGE_UPSTREAM", "")
    assert run(repo_inputs, "generate").exit_code == 0
    assert run(repo_inputs, "render").exit_code == 0
    assert run(repo_inputs, "validate").exit_code == 0

    inventory = repo_inputs / "clusters/h200/inventory.yaml"
    inventory.write_text(inventory.read_text().replace("exa.ai/pool: training", "exa.ai/pool: research", 1))
    line = one_error(run(repo_inputs, "render"))
    assert line.startswith("error: overlays/h200/node-feature-discovery/")
    assert "the generated tree is not current with the inventories and overrides: run `forge generate`" in line
    line = one_error(run(repo_inputs, "validate"))
    assert "run `forge generate` (make generate), then render and validate" in line
    assert run(repo_inputs, "render", "--allow-stale").exit_code == 0  # told to: as it is

    assert run(repo_inputs, "generate").exit_code == 0
    line = one_error(run(repo_inputs, "validate"))
    assert line == ("error: build/rendered/h200: not what the overlays render to now: run `forge render` "
                    "(make render), then validate (--allow-stale to validate it as it is)")
    assert run(repo_inputs, "render").exit_code == 0
    assert run(repo_inputs, "validate").exit_code == 0

    # An override is an input as much as the inventory.
    override = repo_inputs / "clusters/h200/overrides/loki/values.yaml"
    override.parent.mkdir(parents=True)
    override.write_text("loki:\n  limits_config:\n    retention_period: 336h\n")
    assert "overlays/h200/loki/values.yaml (changed)" in one_error(run(repo_inputs, "render"))

    # Without the incremental state (a fresh clone), the tree is built in memory and compared.
    assert run(repo_inputs, "generate").exit_code == 0
    shutil.rmtree(repo_inputs / ".cache")
    assert run(repo_inputs, "render").exit_code == 0
    inventory.write_text(inventory.read_text().replace("exa.ai/pool: research", "exa.ai/pool: training", 1))
    shutil.rmtree(repo_inputs / ".cache")
    assert "run `forge generate`" in one_error(run(repo_inputs, "render"))


def test_a_rendered_file_changed_by_hand_is_refused_by_validate(repo_inputs: Path, kustomize, monkeypatch):
    monkeypatch.setenv("FORGE_UPSTREAM", "")
    assert run(repo_inputs, "generate").exit_code == 0
    assert run(repo_inputs, "render").exit_code == 0
    rendered = repo_inputs / "build/rendered/a100/loki.yaml"
    rendered.write_text(rendered.read_text() + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert one_error(run(repo_inputs, "validate")).startswith("error: build/rendered/a100: not what the overlays render to now")
