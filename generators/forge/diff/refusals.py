"""What a real API server refused of the change: `forge twin upgrade CLUSTER --base REF` applies
REF's output to the fleet in a box, then the working tree's over it, and writes what the server
refused to build/twin/<cluster>.upgrade.json (forge.twin.upgrade). forge diff shows each refusal
as a HIGH risk, Argo CD would fail to sync it, while that result still describes the change under
review: the same base commit, and the same generated inputs of the cluster (by git blob id).
Otherwise it says the result is stale and how to refresh it; without one, it says nothing."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from forge.diff.flag import Flag
from forge.diff.sides import working_blobs
from forge.files.paths import ARGOCD_DIR, BASE_DIR, CLUSTERS_DIR, OVERLAYS_DIR, TWIN_UPGRADE_REPORT


def inputs_digest(root: Path, cluster: str) -> str:
    """Of the cluster's generated files and base/, as git names them (forge diff's render inputs)."""
    blobs = working_blobs(root, (f"{OVERLAYS_DIR}/{cluster}", f"{CLUSTERS_DIR}/{cluster}/{ARGOCD_DIR}", BASE_DIR))
    return hashlib.sha256("".join(f"{path}\0{blob}\n" for path, blob in sorted(blobs.items())).encode()).hexdigest()


def refusal_flags(root: Path, commit: str, clusters: list[str]) -> list[Flag]:
    flags = []
    for cluster in clusters:
        path = root / TWIN_UPGRADE_REPORT.format(cluster=cluster)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        again = f"run `forge twin upgrade {cluster} --base <the base>` again"
        if data.get("base") != commit:
            flags.append(Flag("low", cluster, "twin", "twin", f"the box's upgrade result is for base {str(data.get('base'))[:12]}, "
                                                               f"not {commit[:12]}: {again}"))
        elif data.get("inputs") != inputs_digest(root, cluster):
            flags.append(Flag("low", cluster, "twin", "twin", f"the generated files changed since the box's upgrade result: {again}"))
        else:
            for r in data.get("refused") or []:
                component = str(r.get("application", "")).removeprefix(f"{cluster}-") or "twin"
                flags.append(Flag("high", cluster, component, "twin",
                                  f"a real API server refuses this upgrade (Argo CD's sync would fail): {r.get('object')} "
                                  f"({r.get('where')}): {r.get('message')}"))
    return flags
