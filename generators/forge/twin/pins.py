"""What the box runs, pinned: ci/tools.json (`twin`: Kubernetes, etcd, kwok) and, for the
controllers forge deploys, charts/versions.yaml itself, so the box never runs another Kueue or
training-operator than the clusters do."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from forge.errors import ForgeError
from forge.facts.versions import chart_pins, versions

TOOLS_FILE = Path("ci/tools.json")


@dataclass(frozen=True)
class GoProgram:
    """One or more commands of a Go module at a version, built with `go install` (`builder` is
    None) or with `go build` from a module folder of this repo that pins its dependencies."""

    name: str  # the cache folder's stem: kubernetes, kueue, ...
    module: str
    version: str
    commands: tuple[str, ...]  # package paths inside the module (kube-apiserver: cmd/kube-apiserver), or "./<dir>": ours, in `builder`
    builder: str | None = None  # a folder of this repo with a go.mod that requires `module`
    keep: tuple[str, ...] = ()  # folders of the module copied beside the binary (data the box reads)
    # The binary's name where Go's would not do: etcd's main is its module's root ("." in
    # commands), which `go build` would name `server`.
    output: str | None = None
    # The Go toolchain the build must use (GOTOOLCHAIN, fetched through the module proxy) where
    # the program needs a newer Go than go_min: Argo CD v3.6 needs Go 1.27.
    go_toolchain: str | None = None

    def local(self, command: str) -> bool:
        """A main package of ours in the builder module (netpol-verdicts asks cyclonus's library)."""
        return command.startswith("./")

    def binary(self, command: str) -> str:
        """The file name `go build`/`go install` gives the command (training-operator.v1 keeps its dot)."""
        return self.output or command.rstrip("/").rpartition("/")[2]

    def package(self, command: str) -> str:
        return self.module if command == "." else f"{self.module}/{command}"


@dataclass(frozen=True)
class BoxPins:
    go_min: tuple[int, int]
    programs: tuple[GoProgram, ...]
    # Built only when a step asks for them (ensure_program), never by `forge twin run`: Argo CD.
    optional: tuple[GoProgram, ...] = ()

    @property
    def kubernetes(self) -> GoProgram:
        return self.program("kubernetes")

    def program(self, name: str) -> GoProgram:
        return next(p for p in self.programs + self.optional if p.name == name)

    @property
    def kubernetes_minor(self) -> str:
        """"1.34" of v1.34.4: the minor an inventory's kubernetes_version must name."""
        return ".".join(self.kubernetes.version.lstrip("v").split(".")[:2])


def _version_from(root: Path, ref: str) -> str:
    """The deployed version a box program must match: charts.<key> or sources.<key>."""
    section, _, key = ref.partition(".")
    pinned = {"charts": lambda: chart_pins(root)[key].version, "sources": lambda: versions(root).sources[key].ref}
    if section not in pinned:
        raise ForgeError(f"{TOOLS_FILE}: twin: version_from {ref!r}: use charts.<key> or sources.<key>")
    version = pinned[section]()
    return version if version.startswith("v") else f"v{version}"  # Go module versions start with v


def _field(entry: dict, name: str, key: str, kind: type, required: bool = False):
    """entry[key] if it is a `kind` (a list: of text), else the error naming ci/tools.json and the field."""
    value = entry.get(key)
    if value is None and not required:
        return None
    ok = isinstance(value, kind) and not isinstance(value, bool) and (
        kind is not list or all(isinstance(v, str) and v for v in value)) and value != ""
    if not ok:
        what = {str: "text", list: "a list of text"}[kind]
        raise ForgeError(f"{TOOLS_FILE}: twin.{name}.{key}: must be {what}, not {str(value)[:60]!r}")
    return value


def _program(root: Path, name: str, entry: object) -> GoProgram:
    if not isinstance(entry, dict):
        raise ForgeError(f"{TOOLS_FILE}: twin.{name}: must be a mapping (module, version, command), not {str(entry)[:60]!r}")
    commands = _field(entry, name, "commands", list)
    commands = tuple(f"cmd/{c}" for c in commands) if commands else (_field(entry, name, "command", str, True),)
    if "version" in entry:
        version = _field(entry, name, "version", str, True)
    else:
        version = _version_from(root, _field(entry, name, "version_from", str, True))
    return GoProgram(name, _field(entry, name, "module", str, True), version, commands, _field(entry, name, "builder", str),
                     tuple(_field(entry, name, "keep", list) or ()), _field(entry, name, "binary", str),
                     _field(entry, name, "go_toolchain", str))


def box_pins(root: Path) -> BoxPins:
    path = root / TOOLS_FILE
    try:
        twin = json.loads(path.read_text(encoding="utf-8"))["twin"]
        if not isinstance(twin, dict):
            raise ForgeError(f"{TOOLS_FILE}: twin: must be a mapping of the box's programs, not {str(twin)[:60]!r}")
        programs = tuple(_program(root, name, twin.get(name)) for name in
                         ("kubernetes", "etcd", "kueue", "training-operator", "kwok", "cyclonus"))
        optional = tuple(_program(root, name, twin[name]) for name in ("argocd-box", "kustomize-box", "karpenter-box"))
        major, minor = (int(x) for x in str(twin["go_min"]).split("."))
        return BoxPins((major, minor), programs, optional)
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise ForgeError(f"{TOOLS_FILE}: the box's pins (key `twin`) cannot be read: {str(exc)[:120] or type(exc).__name__}") from None


def argocd_crds_dir(root: Path, upstream: Path | None) -> Path | None:
    """Argo CD's CRDs in the upstream data (ci/tools.json twin.argocd), or None without the data."""
    if upstream is None:
        return None
    try:
        name = json.loads((root / TOOLS_FILE).read_text(encoding="utf-8"))["twin"]["argocd"]["crds_data"]
    except (OSError, ValueError, KeyError) as exc:
        raise ForgeError(f"{root / TOOLS_FILE}: twin.argocd.crds_data cannot be read: {exc!r}") from None
    folder = upstream / name / "crds"
    if not folder.is_dir():
        raise ForgeError(f"{folder}: no such folder: the upstream data lacks Argo CD's CRDs (ci/tools.json twin.argocd)")
    return folder
