"""Find the external CLIs forge drives. Order: an explicit environment variable, the repo's
tools/bin (what `make setup` installed and verified), then PATH."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from forge.errors import ForgeError
from forge.files.paths import REPO_ROOT


def _find(root: Path, name: str, env: str) -> str | None:
    if os.environ.get(env):
        given = os.environ[env]
        found = shutil.which(given) if os.sep not in given else (given if os.path.isfile(given) else None)
        if not found or not os.access(found, os.X_OK):
            raise ForgeError(f"{env}={given}: {'no such file' if not found else 'not executable'}: set it to the "
                             f"{name} binary (or unset it to use tools/bin/{name} from `make setup`, then PATH)")
        return found
    # The repo worked on, then the checkout forge runs from (where `make setup` put them).
    for folder in dict.fromkeys((root / "tools" / "bin", REPO_ROOT / "tools" / "bin")):
        local = folder / name
        if local.is_file() and os.access(local, os.X_OK):
            return str(local)
    return shutil.which(name)


def kustomize_build_command(root: Path) -> list[str]:
    """The command that builds a kustomization folder given as the next argument:
    `kustomize build` when one is installed, else kubectl's built-in `kubectl kustomize`."""
    found = _find(root, "kustomize", "FORGE_KUSTOMIZE")
    if found:
        return [found, "build"]
    kubectl = _find(root, "kubectl", "FORGE_KUBECTL")
    if kubectl:
        return [kubectl, "kustomize"]
    raise ForgeError("no kustomize found (nor kubectl): run `make setup`, or set FORGE_KUSTOMIZE")


def helm_command(root: Path) -> list[str]:
    found = _find(root, "helm", "FORGE_HELM")
    if not found:
        raise ForgeError("no helm found: run `make setup`, or set FORGE_HELM")
    return [found]
