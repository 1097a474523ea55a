"""Where things live in the repo. Every path forge writes is relative to the repo root."""
from __future__ import annotations

import os
from pathlib import Path

# The repo forge works on: $FORGE_ROOT, else the checkout this package sits in (editable install).
REPO_ROOT = Path(os.environ.get("FORGE_ROOT") or Path(__file__).resolve().parents[3])

CLUSTERS_DIR = "clusters"
OVERLAYS_DIR = "overlays"
BASE_DIR = "base"
INVENTORY_FILE = "inventory.yaml"
ARGOCD_DIR = "argocd"  # clusters/<cluster>/argocd: the generated Argo CD bootstrap, applied by hand once
APPS_DIR = "apps"  # clusters/<cluster>/argocd/apps: the child Applications, all the root Application syncs
RENDERED_DIR = Path("build/rendered")
# What `forge twin upgrade` found (the base revision's output, then the working tree's, on a real
# API server); `forge diff` shows its refusals as risks when base and render still match.
TWIN_UPGRADE_REPORT = "build/twin/{cluster}.upgrade.json"
