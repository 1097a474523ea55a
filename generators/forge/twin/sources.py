"""What each Argo CD Application of a cluster deploys, object by object, with the file and line
each came from, as the box applies it.

- With `build/hydrated/<cluster>/<component>.yaml` (after `make charts hydrate`): that file, which
  is the chart as Argo CD renders it plus forge's overlay: everything the Application deploys.
- Without it (CI cannot download charts): forge's render (`build/rendered/<cluster>/<component>.yaml`)
  plus the CRDs the component's chart installs, from its upstream data folder (`crds/`): the
  objects forge writes meet the same CRDs, with their CEL rules, as on a cluster. The chart's
  own Deployments, RBAC and webhooks are absent then; README says what that leaves out.
- CRDs an operator applies at run time (nv-ipam's) from the data folder of that release.
- Argo CD's own objects (`argocd.yaml`: AppProjects, the root and the child Applications) after
  Argo CD's CRDs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.argocd.bootstrap import app_name
from forge.components import COMPONENTS, Component
from forge.errors import ForgeError
from forge.fleet import ClusterPlan
from forge.files.paths import RENDERED_DIR
from forge.upstream.hydrate import HYDRATED_DIR, load_hydrated
from forge.validate.upstream_data import crd_documents, read_text
from forge.facts.versions import chart_pins

ARGOCD_APP = "argocd"  # the pseudo-Application of Argo CD's own objects, applied first
ARGOCD_NAMESPACE = "argocd"
_CRD_GROUP = re.compile(r"^  group:\s*['\"]?([A-Za-z0-9.-]+)", re.M)


@dataclass(frozen=True)
class Item:
    obj: dict[str, Any]
    file: str  # repo-relative, or the upstream data path
    line: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def ident(self) -> str:
        meta = self.obj.get("metadata") or {}
        ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
        return f"{self.obj.get('kind')} {ns}{meta.get('name') or meta.get('generateName') or '?'}"


@dataclass
class Application:
    name: str  # the Argo CD Application's name (<cluster>-<component>)
    component: str
    wave: int
    hydrated: bool
    items: list[Item] = field(default_factory=list)


def _file_items(path: Path, shown: str) -> list[Item]:
    try:
        return [Item(obj, shown, line) for obj, line in load_hydrated(path)]
    except OSError as exc:
        raise ForgeError(f"{shown}: cannot be read ({exc.strerror})") from None


def _crd_files(folder: Path, groups: set[str] | None, skip: set[str]) -> list[Path]:
    """The CRD files of `folder` whose group is in `groups` (None: any) and not in `skip`."""
    out = []
    for path in sorted(folder.glob("*.y*ml")):
        found = _CRD_GROUP.search(read_text(path)[:4096])
        group = found[1] if found else None
        if group and group not in skip and (groups is None or group in groups):
            out.append(path)
    return out


CRD_KIND = ("apiextensions.k8s.io", "CustomResourceDefinition")


def chart_crds(root: Path, component: Component, upstream: Path, plan: ClusterPlan) -> list[Item]:
    """The CRDs `component`'s chart (or remote base) installs, from its upstream data: of its
    declared CRD groups, or, when it declares none, every CRD there that no other component owns
    (a chart that bundles another's CRDs, as the GPU Operator does NFD's, leaves them to it). None
    where the component's AppProject allows no CRD (its `cluster_kinds`): Argo CD would refuse one,
    and the chart installs none with forge's values (Loki 7.3.0's CRDs are those of its
    grafana-agent-operator and rollout-operator subcharts, both off; the real Argo CD refused the
    stand-in's: "CustomResourceDefinition is not permitted in project forge-a100-loki")."""
    if CRD_KIND not in component.cluster_kinds:
        return runtime_crds(upstream, component)
    remote = component.remote_base(plan.cluster)
    if component.chart:
        folder = upstream / chart_pins(root)[component.chart].data_dir_name / "crds"
    elif remote is not None:  # kustomize at a tag: its data folder is named after the tag
        folder = upstream / f"{component.name}-{remote.revision}" / "crds"
    else:
        folder = None
    if folder is not None and not folder.parent.is_dir():
        raise ForgeError(f"{folder.parent}: no such folder: the upstream data has nothing for {plan.name}/{component.name} "
                         "(set FORGE_UPSTREAM to the upstream chart data)")
    if folder is not None and not folder.is_dir():
        folder = None  # a chart that ships no CRDs (Alluxio's)
    owned_elsewhere = {g for c in COMPONENTS if c is not component for g in c.crd_groups}
    groups = set(component.crd_groups) or None
    items = []
    for path in _crd_files(folder, groups, owned_elsewhere) if folder else []:
        items += [Item(obj, str(path), 1) for obj in crd_documents(path)]
    return items + runtime_crds(upstream, component)


def runtime_crds(upstream: Path, component: Component) -> list[Item]:
    """The CRDs the component's operator applies at run time (nv-ipam's, by the Network Operator):
    in no chart, so the box applies them as the operator would."""
    items = []
    for runtime in component.runtime_crd_data():
        for path in _crd_files(upstream / runtime.data_dir / "crds", {runtime.group}, set()):
            items += [Item(obj, str(path), 1) for obj in crd_documents(path)]
    return items


def applications(root: Path, plan: ClusterPlan, upstream: Path | None, argocd_crds: Path | None) -> list[Application]:
    """The cluster's Applications in the order the root syncs them (sync wave, then name), after
    the pseudo-Application of Argo CD's own objects."""
    rendered = root / RENDERED_DIR / plan.name
    if not rendered.is_dir():
        raise ForgeError(f"{rendered.relative_to(root)}: nothing rendered for {plan.name}: run `forge render` first")
    argo = Application(ARGOCD_APP, ARGOCD_APP, -1000, False)
    if argocd_crds is not None:
        for path in sorted(argocd_crds.glob("*.y*ml")):
            argo.items += [Item(obj, str(path), 1) for obj in crd_documents(path)]
    argo.items.append(Item({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ARGOCD_NAMESPACE}},
                           "(the Argo CD installation)", 0))
    # Argo CD runs hooks (the root's PreSync prerequisites check), it does not keep them as objects:
    # the box has no Argo CD to run them, and is its own prerequisites.
    argo.items += [i for i in _file_items(rendered / "argocd.yaml", f"{RENDERED_DIR}/{plan.name}/argocd.yaml")
                   if "argocd.argoproj.io/hook" not in ((i.obj.get("metadata") or {}).get("annotations") or {})]
    apps = [argo]
    for component in plan.components:
        hydrated = root / HYDRATED_DIR / plan.name / f"{component.name}.yaml"
        app = Application(app_name(plan.cluster, component.name), component.name, component.sync_wave, hydrated.is_file())
        if app.hydrated:
            app.items = _file_items(hydrated, f"{HYDRATED_DIR}/{plan.name}/{component.name}.yaml")
            if upstream is not None:
                app.items += runtime_crds(upstream, component)
        else:
            if upstream is not None:
                app.items = chart_crds(root, component, upstream, plan)
            app.items += _file_items(rendered / f"{component.name}.yaml", f"{RENDERED_DIR}/{plan.name}/{component.name}.yaml")
        apps.append(app)
    apps[1:] = sorted(apps[1:], key=lambda a: (a.wave, a.name))
    return apps
