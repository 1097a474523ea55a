"""An upgrade played on the box: the base revision's output applied as Argo CD has it today, then
the working tree's over it. What the server refuses on the second sync (an immutable field, a CEL
transition rule comparing old and new) is what Argo CD would fail to sync on the day the change
lands. The refusals are written to build/twin/<cluster>.upgrade.json with the base commit and a
digest of the cluster's generated files, so `forge diff` shows them as risks of that same change
(forge.diff.refusals).
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from forge.diff.refusals import inputs_digest
from forge.diff.revisions import base_worktree, resolve
from forge.errors import ForgeError
from forge.fleet import ClusterPlan, load_fleet
from forge.files.paths import RENDERED_DIR, TWIN_UPGRADE_REPORT
from forge.render.overlays import render_all
from forge.twin.kube import Kube
from forge.twin.sources import applications
from forge.twin.sync import Refusal, Syncer, SyncReport


@dataclass
class UpgradeResult:
    base: str
    base_report: SyncReport
    head_report: SyncReport

    @property
    def refused(self) -> list[Refusal]:
        return self.head_report.refused


def play_upgrade(root: Path, plan: ClusterPlan, kube: Kube, syncer: Syncer, ref: str, upstream: Path | None,
                 argocd_crds: Path | None, say: Callable[[str], None]) -> UpgradeResult:
    commit = resolve(root, ref)
    with tempfile.TemporaryDirectory(prefix="forge-twin-base-") as tmp:
        with base_worktree(root, commit, Path(tmp)) as base_root:
            try:
                base_plan = next((p for p in load_fleet(base_root) if p.name == plan.name), plan)
            except ForgeError:
                base_plan = plan  # an inventory this code no longer reads: the components are the same
            render_all(base_root, out=base_root / RENDERED_DIR)
            if not (base_root / RENDERED_DIR / plan.name).is_dir():
                raise ForgeError(f"--base {ref}: cluster {plan.name} does not exist at {commit[:12]}: nothing to upgrade from")
            say(f"twin upgrade {plan.name}: applying the base {ref} ({commit[:12]})")
            base_report = syncer.sync(applications(base_root, base_plan, upstream, argocd_crds))
    say(f"twin upgrade {plan.name}: applying the working tree over it")
    head_report = syncer.sync(applications(root, plan, upstream, argocd_crds))
    result = UpgradeResult(commit, base_report, head_report)
    _write(root, plan.name, result)
    return result


def _write(root: Path, cluster: str, result: UpgradeResult) -> None:
    path = root / TWIN_UPGRADE_REPORT.format(cluster=cluster)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"base": result.base, "inputs": inputs_digest(root, cluster),
            "refused": [{"application": r.app, "where": r.item.where, "object": r.item.ident,
                         "reason": r.reason or str(r.status), "message": r.message} for r in result.refused]}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
