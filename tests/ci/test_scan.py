"""The security scan (`make scan`: ci/scan.py over checkov) and its reviewed skip file."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess

import pytest

from tests.helpers import REPO

SCAN_PYTHON = REPO / ".venv-scan/bin/python"
spec = importlib.util.spec_from_file_location("forge_ci_scan", REPO / "ci/scan.py")
scan = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scan)


def checkov_checks() -> dict[str, list[str]]:
    """checkov's Kubernetes checks, id -> the resource kinds it applies to, from the pinned checkov."""
    if not SCAN_PYTHON.is_file():
        missing = "the scanner's venv is missing: run `make scan` (CI runs it before the tests)"
        if os.environ.get("CI"):  # CI installs it (.ci/run: make scan, then make test): a skip there would hide the scan's tests
            pytest.fail(missing)
        pytest.skip(missing)
    code = ("import json; from checkov.kubernetes.checks.resource.registry import registry as r; "
            "out = {}\nfor kind, checks in r.checks.items():\n    for c in checks: out.setdefault(c.id, []).append(kind)\n"
            "print(json.dumps(out))")
    return json.loads(subprocess.run([str(SCAN_PYTHON), "-c", code], check=True, capture_output=True, text=True).stdout)


def test_every_skip_has_a_reason_and_names_a_real_check_for_a_kind_it_covers():
    skips = scan.load_skips()
    assert skips, "an empty skip file would make this test vacuous"
    checks = checkov_checks()
    for check, kinds in skips.items():
        assert check in checks, f"{check} is not a checkov Kubernetes check"
        for kind, reason in kinds.items():
            assert kind in checks[check], f"{check} does not apply to {kind} (it covers {checks[check]})"
            assert len(reason) >= 40 and reason[0].isupper(), (check, kind)


def test_a_skip_without_a_reason_or_with_a_bad_id_is_refused(tmp_path):
    bad = tmp_path / "skips.yaml"
    bad.write_text("CKV_K8S_43:\n  Job: ''\n")
    with pytest.raises(scan.ScanError, match="CKV_K8S_43.Job: give the reason"):
        scan.load_skips(bad)
    bad.write_text("CKV_AWS_1:\n  Job: a reason long enough to pass the length rule\n")
    with pytest.raises(scan.ScanError, match="not a checkov Kubernetes check id"):
        scan.load_skips(bad)


def finding(check: str, resource: str) -> dict:
    return {"check_id": check, "resource": resource, "file_path": "/a100/x.yaml", "check_name": "name"}


def test_findings_not_skipped_fail_and_a_skip_matching_nothing_is_stale():
    skips = {"CKV_K8S_8": {"PodTemplate": "batch"}, "CKV_K8S_43": {"Job": "tags"}}
    problems, stale, used = scan.triage([finding("CKV_K8S_8", "PodTemplate.ns.forge-default"),
                                         finding("CKV_K8S_8", "Deployment.ns.web")], skips)
    # A skip is per check and kind: the same check on a Deployment is a finding.
    assert problems == ["FAIL /a100/x.yaml Deployment/ns/web CKV_K8S_8 name"]
    assert stale == ["STALE CKV_K8S_43 Job: no finding left to skip; remove it from ci/checkov-skips.yaml"]
    assert used == {("CKV_K8S_8", "PodTemplate"): 1}


def test_scan_passes_on_the_rendered_output_with_the_reviewed_skips(repo_inputs, tmp_path):
    """End to end with the pinned checkov: forge's rendered output passes, and a PodTemplate that
    loses its hardening fails the scan."""
    checkov_checks()  # skips without the scanner's venv
    from click.testing import CliRunner

    from forge.commands.main import main
    from forge.render.overlays import render_all
    assert CliRunner().invoke(main, ["generate", "--root", str(repo_inputs)]).exit_code == 0
    render_all(repo_inputs)
    rendered = repo_inputs / "build/rendered"
    run = subprocess.run([str(SCAN_PYTHON), str(REPO / "ci/scan.py"), str(rendered)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 findings not fixed or skipped" in run.stdout and "0 stale skips" in run.stdout
    flyte = rendered / "a100/flyte.yaml"
    flyte.write_text(flyte.read_text().replace("allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", 1))
    run = subprocess.run([str(SCAN_PYTHON), str(REPO / "ci/scan.py"), str(rendered)], capture_output=True, text=True)
    assert run.returncode == 1 and "CKV_K8S_20" in run.stdout, run.stdout


def test_checkov_reports_one_after_another_are_all_read():
    # Two --directory (build/rendered and build/hydrated after `make hydrate`) give two JSON
    # reports back to back, not a list: reading only one ended `make scan` in a traceback.
    one, two = {"check_type": "kubernetes", "n": 1}, {"check_type": "kubernetes", "n": 2}
    assert scan.json_documents(json.dumps(one, indent=4) + "\n" + json.dumps(two, indent=4) + "\n") == [one, two]
    assert scan.json_documents(json.dumps([one, two])) == [one, two]
    assert scan.json_documents(json.dumps(one)) == [one]
