"""The box's programs, built once into a cache outside the repository and kept by version.

Go programs come from the Go module proxy: Kueue, the training-operator and kwok with `go install
MODULE/CMD@VERSION`; kube-apiserver, kube-scheduler and kube-controller-manager with `go build`
from ci/twin/kubernetes, a module of ours that requires k8s.io/kubernetes and pins each staging
module (k8s.io/kubernetes cannot be `go install`ed); etcd likewise from ci/twin/etcd (etcd's
server module replaces its sibling modules with folders of its repository); netpol-verdicts,
our own main package in ci/twin/cyclonus, with `go build` against cyclonus's NetworkPolicy
engine (forge.twin.flows).

Each program's folder is named by its version and a digest of everything that decides the build
(module, version, commands, flags, the builder's go.mod and go.sum, Go's minor version); it is
built into a temporary folder and renamed into place when complete, so an interrupted build
leaves nothing that looks finished. The cache: $FORGE_TWIN_CACHE, else $XDG_CACHE_HOME/forge/twin,
else ~/.cache/forge/twin; Go's own build and module caches stay where Go keeps them.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from forge.errors import ForgeError
from forge.twin.pins import BoxPins, GoProgram, box_pins

Say = Callable[[str], None]
HEARTBEAT_SECONDS = 10  # CI's logs get a line at least this often during a long build
_DONE = ".complete"


def cache_root(root: Path) -> Path:
    env = os.environ.get("FORGE_TWIN_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "forge" / "twin"
    base = base.expanduser().resolve()
    if base.is_relative_to(root.resolve()):
        raise ForgeError(f"FORGE_TWIN_CACHE={base}: the box's build cache must be outside the repository "
                         f"({root.resolve()}): it holds gigabytes of binaries")
    return base


def go_version() -> tuple[int, int]:
    go = shutil.which("go")
    if go is None:
        raise ForgeError("the box builds its programs with Go, and `go` is not on PATH: install Go "
                         "(1.26 or newer) or put it on PATH")
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, timeout=60).stdout.strip()
    found = re.match(r"go(\d+)\.(\d+)", out)
    if not found:
        raise ForgeError(f"`go env GOVERSION` printed {out!r}, not a Go version: check the Go installation")
    return int(found[1]), int(found[2])


def go_version_line() -> str:
    return subprocess.run(["go", "version"], capture_output=True, text=True, timeout=60).stdout.strip()


def _digest(*parts: object) -> str:
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:12]


def _ldflags(program: GoProgram) -> str:
    """Stamp the version the program reports: the API server's /version, Kueue's --version."""
    if program.name == "kubernetes":
        major, minor = program.version.lstrip("v").split(".")[:2]
        stamps = {f"{pkg}.{k}": v for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
                  for k, v in (("gitVersion", program.version), ("gitMajor", major), ("gitMinor", minor),
                               ("gitTreeState", "clean"))}
    elif program.name == "kueue":
        stamps = {"sigs.k8s.io/kueue/pkg/version.GitVersion": program.version}
    elif program.name == "argocd-box":  # else it reports v99.99.99+unknown
        stamps = {"github.com/argoproj/argo-cd/v3/common.version": program.version.lstrip("v")}
    elif program.name == "karpenter-box":  # else it logs version "unspecified"
        stamps = {"sigs.k8s.io/karpenter/pkg/operator.Version": program.version}
    else:
        stamps = {}
    return " ".join(["-s", "-w", *(f"-X {k}={v}" for k, v in sorted(stamps.items()))])


class Builder:
    def __init__(self, root: Path, pins: BoxPins, say: Say) -> None:
        self.root, self.pins, self.say = root, pins, say
        self.cache = cache_root(root)

    def folder(self, program: GoProgram) -> Path:
        """Named by everything that decides the build but Go's version (a newer Go builds the
        same program; `.complete` records which one did)."""
        inputs = [program.module, program.version, *program.commands, _ldflags(program), *program.keep]
        if program.output:  # a new input: folders of the programs without one keep their names
            inputs.append(program.output)
        if program.go_toolchain:  # likewise
            inputs.append(program.go_toolchain)
        if program.builder:
            inputs += [(self.root / program.builder / f).read_bytes() for f in ("go.mod", "go.sum")]
            inputs += [p.read_bytes() for c in program.commands if program.local(c)
                       for p in sorted((self.root / program.builder / c).glob("*.go"))]
        return self.cache / f"{program.name}-{program.version}-{_digest(*inputs)}"

    def ensure_all(self) -> dict[str, Path]:
        """Every program's binary, built where missing: {binary name: path}. Each program's
        data folders (`keep`) are in `<binary's folder>/data/`."""
        missing = [p for p in self.pins.programs if not (self.folder(p) / _DONE).is_file()]
        if missing:  # only a cold cache asks Go anything (each call costs a second)
            go = go_version()
            if go < self.pins.go_min:
                raise ForgeError(f"Go {go[0]}.{go[1]} is too old for the box's programs: they need Go "
                                 f"{self.pins.go_min[0]}.{self.pins.go_min[1]} or newer (ci/tools.json twin.go_min)")
            for program in missing:
                self._build(program, self.folder(program))
        return {program.binary(c): self.folder(program) / program.binary(c) for program in self.pins.programs
                for c in program.commands}

    def _build(self, program: GoProgram, folder: Path) -> None:
        self.cache.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=self.cache))
        try:
            env = {**os.environ, "GOFLAGS": "-trimpath", "GOWORK": "off", "CGO_ENABLED": "0"}
            if program.go_toolchain:  # Go downloads that toolchain through the module proxy
                env["GOTOOLCHAIN"] = program.go_toolchain
            flags = ["-ldflags", _ldflags(program)]
            if program.builder:
                out = str(work / program.output) if program.output else str(work) + "/"
                packages = [c if program.local(c) else program.package(c) for c in program.commands]
                cmd, cwd = ["go", "build", *flags, "-o", out, *packages], self.root / program.builder
            else:
                env["GOBIN"] = str(work)
                cmd, cwd = ["go", "install", *flags, *(f"{program.package(c)}@{program.version}" for c in program.commands)], work
            self._run(cmd, cwd, env, f"{program.name} {program.version}")
            if program.keep:
                self._keep(program, work, env)
            (work / _DONE).write_text(f"{go_version_line()}\n{' '.join(cmd)}\n", encoding="utf-8")
            self._settle(work, folder)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    @staticmethod
    def _settle(work: Path, folder: Path) -> None:
        """Move a finished build into place. Two forge runs on one machine (two boxes started at
        once) may build the same program together: the first to finish wins, the other's copy is
        dropped (the same inputs give the same program)."""
        if (folder / _DONE).is_file():
            return
        shutil.rmtree(folder, ignore_errors=True)
        try:
            work.rename(folder)
        except OSError as e:
            if not (folder / _DONE).is_file():
                raise ForgeError(f"twin build: cannot move the build into {folder}: {e.strerror}; remove that "
                                 f"folder and run again") from None

    def _keep(self, program: GoProgram, work: Path, env: dict[str, str]) -> None:
        """Copy the module's data folders the box reads at run time next to the binary, so a
        warm box needs no Go at all."""
        done = subprocess.run(["go", "mod", "download", "-json", f"{program.module}@{program.version}"],
                              capture_output=True, text=True, timeout=600, cwd=work, env=env)
        try:
            source = Path(json.loads(done.stdout)["Dir"])
        except (ValueError, KeyError):
            raise ForgeError(f"twin build: {program.name} {program.version}: its module cannot be downloaded: "
                             f"{done.stderr.strip()[-400:]}") from None
        for rel in program.keep:
            shutil.copytree(source / rel, work / "data" / rel)
            for path in (work / "data" / rel).rglob("*"):  # the module cache is read-only
                path.chmod(0o755 if path.is_dir() else 0o644)

    def _run(self, cmd: list[str], cwd: Path, env: dict[str, str], what: str) -> None:
        """Run a build, saying every HEARTBEAT_SECONDS that it still runs (a cold Kubernetes build
        takes minutes); its output is shown only when it fails."""
        started = time.monotonic()
        self.say(f"twin build: {what}: building (cold: minutes; cached afterwards in {self.cache})")
        with tempfile.TemporaryFile() as log:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                while proc.poll() is None:
                    try:
                        proc.wait(timeout=HEARTBEAT_SECONDS)
                    except subprocess.TimeoutExpired:
                        self.say(f"twin build: {what}: {time.monotonic() - started:.0f}s")
            finally:
                if proc.poll() is None:  # Ctrl-C: stop the build, keep no partial folder
                    proc.kill()
                    proc.wait()
            log.seek(0)
            output = log.read().decode(errors="replace")
        if proc.returncode != 0:
            tail = "\n".join(line for line in output.splitlines() if not line.startswith("go: downloading"))[-3000:]
            raise ForgeError(f"twin build: {what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}\n"
                             "check the network to the Go module proxy (GOPROXY) and the Go version")
        self.say(f"twin build: {what}: built in {time.monotonic() - started:.0f}s")


def ensure_binaries(root: Path, pins: BoxPins, say: Say | None = None) -> dict[str, Path]:
    return Builder(root, pins, say or (lambda line: print(line, file=sys.stderr, flush=True))).ensure_all()


def ensure_program(root: Path, name: str, say: Say | None = None) -> dict[str, Path]:
    """One program's binaries ({binary name: path}), built if missing: the flows' NetworkPolicy
    engine (`cyclonus`) without building the whole box."""
    pins = box_pins(root)
    builder, program = Builder(root, pins, say or (lambda line: print(line, file=sys.stderr, flush=True))), pins.program(name)
    folder = builder.folder(program)
    if not (folder / _DONE).is_file():
        if not program.go_toolchain and go_version() < pins.go_min:
            raise ForgeError(f"Go {'.'.join(map(str, go_version()))} is too old for {name}: it needs Go "
                             f"{pins.go_min[0]}.{pins.go_min[1]} or newer (ci/tools.json twin.go_min)")
        builder._build(program, folder)
    return {program.binary(c): folder / program.binary(c) for c in program.commands}
