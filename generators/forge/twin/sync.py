"""forge's output applied the way Argo CD syncs it, and what the API server refused.

Order (Argo CD's sync engine, gitops-engine's syncTasks): Applications by sync wave, then name;
inside one, by phase (PreSync, Sync, PostSync), sync wave, kind (Namespaces first, CRDs before
RBAC and workloads, custom resources last) and name; then each Namespace is moved before the first
object in it and each CRD before the first object of its kind. Every object is applied with
server-side apply (field manager `argocd-controller`, forced) and strict field validation.

Set aside, and listed, never dropped in silence: webhook configurations and APIServices whose
servers are not in the box, CRD conversion webhooks likewise (their strategy becomes None), and
hooks that do not run on a sync (delete and test hooks). Kueue's webhooks are wired to the box's
Kueue instead (forge.twin.controllers), so their chart copies are set aside as replaced.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from forge.kube_apis import Served
from forge.twin.kube import ApiError, Kube
from forge.twin.served import REASON as NOT_SERVED, not_served
from forge.twin.sources import Application, Item

# gitops-engine's kindOrder (after Helm's install order); kinds not listed sort after all of these.
KIND_ORDER = {k: i for i, k in enumerate((
    "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy", "PodDisruptionBudget",
    "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass", "PersistentVolume",
    "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
    "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod",
    "ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job",
    "CronJob", "IngressClass", "Ingress", "APIService"))}
PHASES = {"PreSync": -1, "Sync": 0, "PostSync": 1, "SyncFail": 2}
# Helm hooks as Argo CD maps them; the others never run on a sync.
HELM_HOOKS = {"pre-install": "PreSync", "pre-upgrade": "PreSync", "post-install": "PostSync", "post-upgrade": "PostSync"}
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
CLUSTER_SCOPED = (*WEBHOOK_KINDS, "APIService", "CustomResourceDefinition")
RETRY_SECONDS = 30.0  # a webhook starting: Argo CD retries too
ESTABLISH_SECONDS = 15.0  # a CRD becoming Established


@dataclass(frozen=True)
class Task:
    item: Item
    phase: str
    wave: int

    def key(self) -> tuple:
        meta = self.item.obj.get("metadata") or {}
        return (PHASES[self.phase], self.wave, KIND_ORDER.get(str(self.item.obj.get("kind")), len(KIND_ORDER)),
                str(meta.get("name") or ""))


@dataclass(frozen=True)
class Refusal:
    app: str
    item: Item
    status: int
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.item.where}: {self.item.ident} (Application {self.app}): refused ({self.reason or self.status}): {self.message}"


@dataclass(frozen=True)
class SetAside:
    app: str
    item: Item
    why: str

    def __str__(self) -> str:
        return f"{self.item.where}: {self.item.ident} (Application {self.app}): set aside: {self.why}"


@dataclass
class SyncReport:
    applied: int = 0
    refused: list[Refusal] = field(default_factory=list)
    set_aside: list[SetAside] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.applied / self.seconds if self.seconds else 0.0


def _annotations(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def phase_of(obj: dict[str, Any]) -> str | None:
    """The sync phase an object is applied in, or None when a sync never applies it."""
    ann = _annotations(obj)
    if "argocd.argoproj.io/hook" in ann:
        phases = [p.strip() for p in ann["argocd.argoproj.io/hook"].split(",")]
        phase = next((p for p in phases if p in PHASES), None)
        return phase  # Skip, PostDelete: None
    if "helm.sh/hook" in ann:
        return next((HELM_HOOKS[h.strip()] for h in ann["helm.sh/hook"].split(",") if h.strip() in HELM_HOOKS), None)
    return "Sync"


def wave_of(obj: dict[str, Any]) -> int:
    ann = _annotations(obj)
    raw = ann.get("argocd.argoproj.io/sync-wave") or ann.get("helm.sh/hook-weight") or "0"
    try:
        return int(raw)
    except ValueError:
        return 0


def _move_before_first_user(tasks: list[Task], dep_key: Callable[[Task], str | None],
                            user_key: Callable[[Task], str | None]) -> list[Task]:
    """gitops-engine's adjustDeps: a dependency (a Namespace, a CRD) sorted after its first user
    moves in front of it and takes that user's phase and wave."""
    out = list(tasks)
    first_user: dict[str, int] = {}
    i = 0
    while i < len(out):
        dep = dep_key(out[i])
        if dep is not None and dep in first_user and first_user[dep] < i:
            at = first_user[dep]
            moved = Task(out[i].item, out[at].phase, out[at].wave)
            del out[i]
            out.insert(at, moved)
            first_user = {k: (v + 1 if v >= at else v) for k, v in first_user.items()}
        else:
            user = user_key(out[i])
            if user is not None and user not in first_user:
                first_user[user] = i
        i += 1
    return out


def ordered(items: list[Item]) -> tuple[list[Task], list[Item]]:
    """(tasks in sync order, hooks a sync never runs)."""
    tasks, skipped = [], []
    for item in items:
        phase = phase_of(item.obj)
        if phase is None:
            skipped.append(item)
        else:
            tasks.append(Task(item, phase, wave_of(item.obj)))
    tasks.sort(key=Task.key)

    def namespace_of(t: Task) -> str | None:
        o = t.item.obj
        return (o.get("metadata") or {}).get("name") if o.get("kind") == "Namespace" and o.get("apiVersion") == "v1" else None

    def crd_of(t: Task) -> str | None:
        o = t.item.obj
        if o.get("kind") != "CustomResourceDefinition":
            return None
        spec = o.get("spec") or {}
        return f"{spec.get('group')}/{(spec.get('names') or {}).get('kind')}"

    tasks = _move_before_first_user(tasks, namespace_of, lambda t: (t.item.obj.get("metadata") or {}).get("namespace"))
    tasks = _move_before_first_user(tasks, crd_of, lambda t: f"{str(t.item.obj.get('apiVersion', '')).rpartition('/')[0]}/{t.item.obj.get('kind')}")
    return tasks, skipped


class Syncer:
    """Applies Applications; `wiring` decides, per object, whether the box replaces it (returns a
    reason) and may rewrite it for the box (CRD conversion webhooks)."""

    def __init__(self, kube: Kube, wiring: "Wiring", say: Callable[[str], None], served: Served | None = None) -> None:
        self.kube, self.wiring, self.say = kube, wiring, say
        self.served = served  # what the cluster serves: an object of another built-in API is refused at once

    def sync(self, apps: list[Application]) -> SyncReport:
        """Every Application in order; then, as Argo CD's retries would, once more every object
        whose kind did not exist yet (its CRD comes with a later Application)."""
        report = SyncReport()
        started = time.monotonic()
        later: list[tuple[str, Item, dict[str, Any]]] = []
        for app in apps:
            tasks, skipped = ordered(app.items)
            report.set_aside += [SetAside(app.name, i, "a hook that runs on delete or test, never on a sync") for i in skipped]
            for task in tasks:
                obj, why = self.wiring.for_box(task.item.obj)
                if why:
                    report.set_aside.append(SetAside(app.name, task.item, why))
                if obj is not None:
                    self._record(report, app.name, task.item, obj, later)
            self.say(f"twin apply: {app.name}: {len(tasks)} objects")
        if later:
            self.say(f"twin apply: {len(later)} objects again, whose kinds came with a later Application")
            for app_name, item, obj in later:
                self._record(report, app_name, item, obj, None)
        report.seconds = time.monotonic() - started
        return report

    def _record(self, report: SyncReport, app: str, item: Item, obj: dict[str, Any],
                later: list[tuple[str, Item, dict[str, Any]]] | None) -> None:
        error = self._apply(obj)
        if error is None:
            report.applied += 1
            if obj.get("kind") == "CustomResourceDefinition":
                self._established(obj)
        elif why := not_served(self.served, obj, _missing_kind(error)):
            report.refused.append(Refusal(app, item, error.status, NOT_SERVED, why))
        elif later is not None and _missing_kind(error):
            later.append((app, item, obj))
        else:
            report.refused.append(Refusal(app, item, error.status, error.reason, _explain(error)))

    def _apply(self, obj: dict[str, Any]) -> ApiError | None:
        deadline = time.monotonic() + RETRY_SECONDS
        while True:
            try:
                self.kube.apply(obj)
                return None
            except ApiError as exc:
                if not _transient(exc) or time.monotonic() > deadline:
                    return exc
            time.sleep(0.5)

    def _established(self, crd: dict[str, Any]) -> None:
        """Wait (briefly) until the API server serves the CRD's kinds, before its custom resources."""
        deadline = time.monotonic() + ESTABLISH_SECONDS
        name = crd["metadata"]["name"]
        while time.monotonic() < deadline:
            found = self.kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name) or {}
            if any(c.get("type") == "Established" and c.get("status") == "True"
                   for c in (found.get("status") or {}).get("conditions") or []):
                return
            time.sleep(0.2)


def _missing_kind(exc: ApiError) -> bool:
    return exc.status == 404 and "the server has no kind" in exc.message


def _transient(exc: ApiError) -> bool:
    """A webhook not yet serving, a server catching its breath: Argo CD's retry would succeed, so
    the box retries too."""
    text = exc.message
    return "failed calling webhook" in text or exc.status in (429, 503) or "could not find the requested resource" in text


def _explain(exc: ApiError) -> str:
    causes = "; ".join(f"{c.get('field', '')}: {c.get('message', '')}".strip(": ") for c in exc.causes)
    return exc.message if not causes or causes in exc.message else f"{exc.message} [{causes}]"


class Wiring:
    """How objects meet the box: which the box replaces or cannot serve, and how it rewrites them."""

    def __init__(self, served_webhooks: dict[tuple[str, str], int], replaced: dict[tuple[str, str, str], str]) -> None:
        # (service namespace, service name) -> the 127.0.0.1 port its server listens on in the box
        self.served = served_webhooks
        # (kind, namespace, name) -> why the box applies its own instead
        self.replaced = replaced

    def for_box(self, obj: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        kind = str(obj.get("kind"))
        meta = obj.get("metadata") or {}
        # A chart may give a cluster-scoped object a namespace (Kueue's webhooks): the server ignores it.
        namespace = "" if kind in CLUSTER_SCOPED else str(meta.get("namespace") or "")
        key = (kind, namespace, str(meta.get("name") or ""))
        if key in self.replaced:
            return None, self.replaced[key]
        if kind in WEBHOOK_KINDS:
            return None, "its webhook server does not run in the box"
        if kind == "APIService" and (obj.get("spec") or {}).get("service"):
            return None, "an aggregated API whose server does not run in the box (discovery would fail)"
        if kind == "CustomResourceDefinition":
            return self._conversion(obj)
        return obj, None

    def _conversion(self, crd: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        conversion = (crd.get("spec") or {}).get("conversion") or {}
        if conversion.get("strategy") != "Webhook":
            return crd, None
        service = ((conversion.get("webhook") or {}).get("clientConfig") or {}).get("service") or {}
        port = self.served.get((service.get("namespace"), service.get("name")))
        out = copy.deepcopy(crd)
        if port is not None:  # its server runs in the box: the same Service, the box's port
            out["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] = port
            return out, None
        out["spec"]["conversion"] = {"strategy": "None"}
        return out, "its conversion webhook does not run in the box: strategy None (objects stay in the version they were written in)"
