"""Find the external CLIs forge drives. Order: an explicit environment variable, the repo's
tools/bin (what `make setup` installed and verified), then PATH."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from forge.errors import ForgeError


def _find(root: Path, name: str, env: str) -> str | None:
    if os.environ.get(env):
        return os.environ[env]
    local = root / "tools" / "bin" / name
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which(name)


def kustomize_command(root: Path) -> list[str]:
    """`kustomize` when one is installed, else kubectl's built-in `kubectl kustomize`."""
    found = _find(root, "kustomize", "FORGE_KUSTOMIZE")
    if found:
        return [found]
    kubectl = _find(root, "kubectl", "FORGE_KUBECTL")
    if kubectl:
        return [kubectl, "kustomize"]
    raise ForgeError("no kustomize found (nor kubectl): run `make setup`, or set FORGE_KUSTOMIZE")


def helm_command(root: Path) -> list[str]:
    found = _find(root, "helm", "FORGE_HELM")
    if not found:
        raise ForgeError("no helm found: run `make setup`, or set FORGE_HELM")
    return [found]
