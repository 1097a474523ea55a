"""The product's CI definition: workflows that name only pinned actions and run the Makefile's
checks, the CI-neutral scripts they call, and the pre-commit hooks."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, cli

WORKFLOWS = sorted((REPO / ".github/workflows").glob("*.yaml"))
SHA = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}$")


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def test_there_is_a_pull_request_and_a_main_workflow():
    assert [p.name for p in WORKFLOWS] == ["main.yaml", "pull-request.yaml"]
    assert load(REPO / ".github/workflows/pull-request.yaml")["on"] == {"pull_request": {"branches": ["main"]}}
    assert load(REPO / ".github/workflows/main.yaml")["on"] == {"push": {"branches": ["main"]}}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_full_commit_sha(path):
    lines = path.read_text().splitlines()
    uses = [step["uses"] for step in steps(load(path)) if "uses" in step]
    assert uses, "a workflow without actions would make this test vacuous"
    for ref in uses:
        assert SHA.match(ref), f"{path.name}: {ref} is not pinned to a 40-hex commit SHA"
        # The line above names the release the SHA was taken from, for whoever bumps it.
        at = next(i for i, line in enumerate(lines) if line.strip() == f"uses: {ref}")
        assert re.fullmatch(rf"\s*# {re.escape(ref.split('@')[0])} v\d+\.\d+\.\d+", lines[at - 1]), lines[at - 1]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_run_the_makefile_checks_with_cached_tools(path):
    workflow = load(path)
    runs = [step.get("run") for step in steps(workflow)]
    assert runs[runs.index("make setup"):runs.index("make test") + 1] == ["make setup", "make check", "make render", "make validate",
                                                                          "make scan", "make test"]
    cache = next(step for step in steps(workflow) if step.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["path"].split() == [".venv", ".venv-scan", "tools"]
    for keyed in ("requirements.lock", "ci/tools.json", "ci/scan.lock", "steps.python.outputs.python-version"):
        assert keyed in cache["with"]["key"]
    assert workflow["permissions"]["contents"] == "read"


def test_pull_requests_get_the_diff_as_a_comment():
    workflow = load(REPO / ".github/workflows/pull-request.yaml")
    by_name = {step["name"]: step for step in steps(workflow)}
    checkout = by_name["Check out, with history (forge diff needs the target branch)"]
    assert checkout["with"]["fetch-depth"] == 0
    diff = by_name["forge diff against the target branch"]
    assert diff["run"] == 'ci/pr-diff.sh "origin/$BASE_REF" build/forge-diff.md'
    assert diff["env"]["BASE_REF"] == "${{ github.base_ref }}"  # through env: no expression in the script text
    post = by_name["Post the diff as a pull-request comment"]
    assert post["run"] == "ci/post-comment.sh build/forge-diff.md"
    assert workflow["permissions"]["pull-requests"] == "write"


def test_ci_scripts_are_executable_shell():
    for name in ("pr-diff.sh", "post-comment.sh"):
        script = REPO / "ci" / name
        assert os.access(script, os.X_OK), f"ci/{name} is not executable"
        subprocess.run(["bash", "-n", str(script)], check=True)
    assert "<!-- forge-diff -->" in (REPO / "ci/post-comment.sh").read_text()


def test_pr_diff_script_writes_the_comment_and_exits_0_on_changes(repo, kustomize):
    forge_bin = Path(sys.executable).with_name("forge")
    if not forge_bin.exists():
        pytest.skip("needs the forge console script next to this python (make setup)")
    assert cli("node", "set", "h200", "h200-gpu-18", "--mig-layout", "none", "--root", str(repo)).exit_code == 0
    env = {**os.environ, "PATH": f"{forge_bin.parent}{os.pathsep}{Path(kustomize[0]).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p.endswith("generators")),
           "FORGE_PR_TWIN": "0"}  # the box's part (forge twin upgrade) is tests/twin/test_upgrade.py's
    proc = subprocess.run(["bash", "ci/pr-diff.sh", "HEAD", "build/forge-diff.md"], cwd=repo, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "forge diff: changes found, written to build/forge-diff.md\n"
    comment = (repo / "build/forge-diff.md").read_text()
    assert comment.startswith("<!-- forge-diff -->\n### forge diff: `HEAD` → working tree\n")
    assert "| h200 | node-feature-discovery | 0 | 1 | 0 |" in comment
    proc = subprocess.run(["bash", "ci/pr-diff.sh", "no-such-ref", "build/forge-diff.md"], cwd=repo, env=env, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "error: --base no-such-ref: not a commit" in proc.stderr


def test_pre_commit_hooks_are_local_and_run_forge():
    config = load(REPO / ".pre-commit-config.yaml")
    assert [r["repo"] for r in config["repos"]] == ["local"]
    hooks = {h["id"]: h for h in config["repos"][0]["hooks"]}
    assert hooks["forge-inventory"]["entry"] == ".venv/bin/python -m forge.inventory"
    assert re.search(hooks["forge-inventory"]["files"], "clusters/h200/inventory.yaml")
    assert hooks["forge-check"]["entry"] == ".venv/bin/forge check"
    assert hooks["forge-check"]["pass_filenames"] is False


def test_the_inventory_hook_reports_file_and_line(tmp_path):
    bad = tmp_path / "clusters/h200/inventory.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_text((REPO / "clusters/h200/inventory.yaml").read_text().replace(
        "  mig_layouts:\n", "  expected:\n    gpu_nodes: 18\n    gpus: 150\n  mig_layouts:\n", 1))
    line = next(i for i, text in enumerate(bad.read_text().splitlines(), 1) if text == "    gpus: 150")
    burst = tmp_path / "clusters/h200-burst/inventory.yaml"  # h200 bursts into it: the link is checked
    burst.parent.mkdir()
    burst.write_text((REPO / "clusters/h200-burst/inventory.yaml").read_text())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p.endswith("generators"))}
    proc = subprocess.run([sys.executable, "-m", "forge.inventory", "clusters/h200/inventory.yaml",
                           str(REPO / "clusters/a100/inventory.yaml")], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 2  # as the loader in `forge generate`: bad input
    assert proc.stderr.splitlines() == [
        f"clusters/h200/inventory.yaml:{line}: cluster.expected.gpus: expected 150 GPUs, the nodes' profiles add up to 144",
        "1 of 2 inventories have problems",
    ]
    ok = subprocess.run([sys.executable, "-m", "forge.inventory", str(REPO / "clusters/a100/inventory.yaml")],
                        env=env, capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stderr == ""


def test_workflows_pass_yamllint():
    # yamllint is pinned in requirements.lock; run it as a module of this interpreter's venv.
    proc = subprocess.run([sys.executable, "-m", "yamllint", "-s", *map(str, WORKFLOWS), str(REPO / ".pre-commit-config.yaml")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def _upstream_step(workflow: dict) -> tuple[int, dict]:
    found = [(i, s) for i, s in enumerate(steps(workflow)) if "ci/find-upstream.sh" in s.get("run", "")]
    assert len(found) == 1, "the workflow must get the upstream data from ci/find-upstream.sh, once"
    return found[0]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_get_the_upstream_data_as_ci_run_does_before_validating(path):
    """Issue 24, wall 5: green with ~319 items unchecked is what the workflows gave without it."""
    workflow = load(path)
    at, step = _upstream_step(workflow)
    assert step["env"] == {"FORGE_UPSTREAM": "${{ vars.FORGE_UPSTREAM }}"}
    assert 'FORGE_UPSTREAM=$upstream" >> "$GITHUB_ENV"' in step["run"]
    runs = [s.get("run", "") for s in steps(workflow)]
    assert at < next(i for i, r in enumerate(runs) if r == "make validate")
    assert at < next(i for i, r in enumerate(runs) if r == "make test")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_the_upstream_step_fails_with_one_line_without_the_data(path, tmp_path: Path):
    """The step's script as the runner runs it (bash -e), in a clone with no shared/ beside it."""
    _, step = _upstream_step(load(path))
    clone = tmp_path / "clone"
    (clone / "ci").mkdir(parents=True)
    (clone / "ci/find-upstream.sh").write_text((REPO / "ci/find-upstream.sh").read_text())
    env = {k: v for k, v in os.environ.items() if k != "FORGE_UPSTREAM"} | {"FORGE_UPSTREAM": "", "GITHUB_ENV": str(tmp_path / "env")}
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=clone, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("error: no upstream chart data: set FORGE_UPSTREAM=DIR")
    assert not (tmp_path / "env").exists() or "FORGE_UPSTREAM" not in (tmp_path / "env").read_text()
    # With the data beside the clone, the later steps get its path.
    (tmp_path / "shared/upstream").mkdir(parents=True)
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=clone, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and (tmp_path / "env").read_text() == f"FORGE_UPSTREAM={tmp_path / 'shared/upstream'}\n"
