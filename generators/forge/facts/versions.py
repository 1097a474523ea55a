"""Everything forge pins, read from the one versions file (charts/versions.yaml): Helm charts,
container images, git sources deployed with kustomize, and the GPU driver branch per GPU
architecture. No version string lives in Python; a test keeps it so.

A problem in the file is reported as `charts/versions.yaml:line: key.path: message` (exit 2); asking
for a key the file does not pin names the file and the key.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from forge.files import datafile
from forge.errors import ForgeError
from forge.files.paths import REPO_ROOT

VERSIONS_FILE = Path("charts/versions.yaml")

Text = Annotated[str, Field(min_length=1)]


def _pinned(tag: str) -> str:
    if tag == "latest":
        raise ValueError("'latest' pins nothing: give a version tag")
    return tag


# An image tag as registries accept it.
Tag = Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"), AfterValidator(_pinned)]
Repository = Annotated[str, Field(pattern=r"^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+$")]
DriverVersion = Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]+(\.[0-9]+)?$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


@dataclass(frozen=True)
class ChartPin:
    key: str
    repo: str  # Helm repository URL (https://) or OCI registry (oci://)
    chart: str
    version: str

    @property
    def argocd_repo(self) -> str:
        """The repoURL of an Argo CD Helm source: an OCI registry without its oci:// scheme (Argo CD's
        Helm-over-OCI form; the registry is declared to Argo CD as a Helm repository with enableOCI)."""
        return self.repo.removeprefix("oci://")

    @property
    def data_dir_name(self) -> str:
        """The folder name of this chart's reference data (values, schema, CRDs) for validation."""
        return f"{self.chart}-{self.version}"


class ChartEntry(_Strict):
    repo: Annotated[str, Field(pattern=r"^(https?|oci)://\S+$")]
    chart: Text
    version: Text


class Image(_Strict):
    repository: Repository  # registry host and path, without the tag
    tag: Tag
    # Released together with this chart (key under `charts`): its tag must carry the chart's version.
    chart: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.repository}:{self.tag}"

    @property
    def registry(self) -> str:
        """The repository without its last segment (operators that take registry and name apart)."""
        return self.repository.rpartition("/")[0]

    @property
    def name(self) -> str:
        return self.repository.rpartition("/")[2]


class Source(_Strict):
    """A git source deployed with kustomize at a tag (Argo CD builds `path` at `ref`)."""

    repo: Annotated[str, Field(pattern=r"^https://\S+$")]
    ref: Text
    path: Text


class Versions(_Strict):
    gpu_drivers: dict[str, DriverVersion] = {}  # GPU architecture (hardware catalogue) -> driver
    images: dict[str, Image] = {}
    sources: dict[str, Source] = {}
    charts: dict[str, ChartEntry] = {}
    # Machine images by family (a cloud's node OS, e.g. the EKS-optimised AL2023 release Karpenter's
    # EC2NodeClass alias names): never `latest`, which replaces every node when AWS publishes one.
    machine_images: dict[str, Tag] = {}

    def rules(self) -> Iterator[tuple[datafile.Key, str]]:
        """What spans keys: an image released with a chart follows the chart's version."""
        for key, image in self.images.items():
            if image.chart is None:
                continue
            pin = self.charts.get(image.chart)
            if pin is None:
                yield ("images", key, "chart"), f"no chart '{image.chart}' under charts (have: {', '.join(self.charts)})"
            elif pin.version.removeprefix("v") not in image.tag:
                yield ("images", key, "tag"), (f"'{image.tag}' does not carry chart {image.chart}'s version {pin.version}: "
                                               "bump the image with the chart")


def _read(root: Path) -> Versions:
    return datafile.load(root / VERSIONS_FILE, Versions, VERSIONS_FILE.as_posix(), rules=Versions.rules, root=root)


def _stamp(root: Path) -> tuple[int, int] | None:
    """What the file looks like now: the caches below are keyed on it, so an edit in the same
    process (forge diff's working tree, forge bench's change, tests) is never served stale."""
    try:
        st = (root / VERSIONS_FILE).stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def versions(root: Path = REPO_ROOT) -> Versions:
    return _versions(root, _stamp(root))


def chart_pins(root: Path = REPO_ROOT) -> dict[str, ChartPin]:
    return _chart_pins(root, _stamp(root))


@cache
def _versions(root: Path, stamp: tuple[int, int] | None) -> Versions:
    return _read(root)


@cache
def _chart_pins(root: Path, stamp: tuple[int, int] | None) -> dict[str, ChartPin]:
    return {key: ChartPin(key, v.repo, v.chart, v.version) for key, v in _read(root).charts.items()}


def _clear() -> None:
    _versions.cache_clear()
    _chart_pins.cache_clear()


versions.cache_clear = chart_pins.cache_clear = _clear  # type: ignore[attr-defined]


def _missing(section: str, key: str, have: dict) -> ForgeError:
    return ForgeError(f"{VERSIONS_FILE}: {section}.{key}: not pinned (have: {', '.join(have) or 'none'})")


def chart_pin(key: str) -> ChartPin:
    pins = chart_pins()
    if key not in pins:
        raise _missing("charts", key, pins)
    return pins[key]


def image(key: str) -> Image:
    images = versions().images
    if key not in images:
        raise _missing("images", key, images)
    return images[key]


def source(key: str) -> Source:
    sources = versions().sources
    if key not in sources:
        raise _missing("sources", key, sources)
    return sources[key]


def machine_image(family: str) -> str:
    found = versions().machine_images
    if family not in found:
        raise _missing("machine_images", family, found)
    return found[family]


def gpu_driver(architecture: str) -> str:
    drivers = versions().gpu_drivers
    if architecture not in drivers:
        raise _missing("gpu_drivers", architecture, drivers)
    return drivers[architecture]
