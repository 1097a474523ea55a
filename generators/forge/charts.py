"""Chart pins from charts/versions.yaml: the one place upstream chart versions live."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from forge.errors import ForgeError
from forge.paths import REPO_ROOT

VERSIONS_FILE = Path("charts/versions.yaml")


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


@cache
def chart_pins(root: Path = REPO_ROOT) -> dict[str, ChartPin]:
    path = root / VERSIONS_FILE
    try:
        raw = yaml.safe_load(path.read_text())["charts"]
        return {key: ChartPin(key, str(v["repo"]), str(v["chart"]), str(v["version"])) for key, v in raw.items()}
    except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
        raise ForgeError(f"{VERSIONS_FILE}: cannot read chart pins ({exc})") from None


def chart_pin(key: str) -> ChartPin:
    pins = chart_pins()
    if key not in pins:
        raise ForgeError(f"{VERSIONS_FILE}: no pin for chart '{key}' (have: {', '.join(pins)})")
    return pins[key]
