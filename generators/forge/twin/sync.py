"""forge's output applied the way Argo CD syncs it, and what the API server refused.

Order (Argo CD's sync engine, gitops-engine's syncTasks): Applications by sync wave, then name;
inside one, by phase (PreSync, Sync, PostSync), sync wave, kind (Namespaces first, CRDs before
RBAC and workloads, custom resources last) and name; then each Namespace is moved before the first
object in it and each CRD before the first object of its kind. Every object is applied with
server-side apply (field manager `argocd-controller`, forced) and strict field validation.

As gitops-engine's runTasks does, the objects of one run of the same phase, wave and kind are
applied at once (a thread each, up to WORKERS, each on its own kept-alive connection), and the
next run starts when the last of them is answered: a Namespace is there before the objects in it.
A CRD's custom resources wait until it is Established (and only they: nothing else waits on a
CRD); every CRD is Established by the time a sync returns, for the controllers started next.

Set aside, and listed, never dropped in silence: webhook configurations and APIServices whose
servers are not in the box, CRD conversion webhooks likewise (their strategy becomes None), and
hooks that do not run on a sync (delete and test hooks). Kueue's webhooks are wired to the box's
Kueue instead (forge.twin.controllers), so their chart copies are set aside as replaced.
"""
from __future__ import annotations

import copy
import hashlib
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from forge.facts.kube_apis import Served
from forge.twin.karpenter import box_node_pool
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
# Parallel applies: a real API server takes 250-320 objects/s over keep-alive; past about eight
# concurrent requests the box's two cores, not the requests in flight, set the pace.
WORKERS = 8
# CRDs at most this many at once: the server's work on one (schema, CEL, OpenAPI) is CPU-bound
# and large (Prometheus's are MBs), and eight at once on a loaded two-core machine ran past the
# API server's 60 s request timeout.
CRD_WORKERS = 2
TIMEOUT_ATTEMPTS = 3  # a request the server timed out is tried again even past RETRY_SECONDS


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
    applied: bool = False  # applied changed for the box (Wiring.rewrite): `why` says how

    def __str__(self) -> str:
        return f"{self.item.where}: {self.item.ident} (Application {self.app}): {'applied as' if self.applied else 'set aside:'} {self.why}"


@dataclass
class SyncReport:
    applied: int = 0
    refused: list[Refusal] = field(default_factory=list)
    set_aside: list[SetAside] = field(default_factory=list)
    box_only: list[SetAside] = field(default_factory=list)  # applied, rewritten for the box
    seconds: float = 0.0
    # CRDs the box applied, identical, when it started (Kueue's and the training operators', which
    # its controllers need first): a real sync applies each once, so the box does not again.
    already: int = 0

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


def runs(tasks: list[Task]) -> list[list[Task]]:
    """The tasks cut where phase, wave or kind changes (gitops-engine applies one such run at
    once and waits for it before the next)."""
    out: list[list[Task]] = []
    for task in tasks:
        if out and _run_key(out[-1][0]) == _run_key(task):
            out[-1].append(task)
        else:
            out.append([task])
    return out


def _run_key(task: Task) -> tuple:
    return task.phase, task.wave, task.item.obj.get("kind")


def _served_kind(obj: dict[str, Any]) -> tuple[str, str]:
    """(group, kind) of an object: what a CRD serves (spec.group, spec.names.kind)."""
    return str(obj.get("apiVersion") or "").rpartition("/")[0], str(obj.get("kind"))


Later = list[tuple[str, Item, dict[str, Any]]]


class Syncer:
    """Applies Applications; `wiring` decides, per object, whether the box replaces it (returns a
    reason) and may rewrite it for the box (CRD conversion webhooks)."""

    def __init__(self, kube: Kube, wiring: "Wiring", say: Callable[[str], None], served: Served | None = None,
                 crds_applied: dict[str, str] | None = None) -> None:
        self.kube, self.wiring, self.say = kube, wiring, say
        self.served = served  # what the cluster serves: an object of another built-in API is refused at once
        # CRD name -> digest of what this box holds, as applied by this process: the same is not sent again
        self.crds_applied: dict[str, str] = dict(crds_applied or {})
        # (group, kind) -> the CRD applied in this sync that serves it, until seen Established
        self._crds: dict[tuple[str, str], str] = {}
        self._crd_locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._heavy = threading.Semaphore(CRD_WORKERS)

    def sync(self, apps: list[Application]) -> SyncReport:
        """Every Application in order; then, as Argo CD's retries would, once more every object
        whose kind did not exist yet (its CRD comes with a later Application)."""
        report = SyncReport()
        started = time.monotonic()
        later: Later = []
        with ThreadPoolExecutor(WORKERS, thread_name_prefix="twin-apply") as pool:
            for app in apps:
                tasks, skipped = ordered(app.items)
                report.set_aside += [SetAside(app.name, i, "a hook that runs on delete or test, never on a sync") for i in skipped]
                for run in runs(tasks):
                    self._apply_run(pool, report, [(app.name, t.item) for t in run], later)
                self.say(f"twin apply: {app.name}: {len(tasks)} objects")
            if later:
                self.say(f"twin apply: {len(later)} objects again, whose kinds came with a later Application")
                for kind in dict.fromkeys(obj.get("kind") for _, _, obj in later):
                    again = [(a, i, o) for a, i, o in later if o.get("kind") == kind]
                    self._record_all(report, again, list(pool.map(lambda x: self._apply(x[2]), again)), None)
            list(pool.map(self._established, sorted(set(self._crds.values()))))
        report.seconds = time.monotonic() - started
        return report

    def _apply_run(self, pool: ThreadPoolExecutor, report: SyncReport, run: list[tuple[str, Item]], later: Later) -> None:
        """One run of objects at once; what was refused is listed in the run's order."""
        todo = []
        for app, item in run:
            obj, why = self.wiring.for_box(item.obj)
            if why:
                report.set_aside.append(SetAside(app, item, why))
            if obj is not None and (change := self.wiring.rewrite(obj)):
                obj = change[0]
                report.box_only.append(SetAside(app, item, change[1], applied=True))
            if obj is not None and self._held(obj):
                report.already += 1
            elif obj is not None:
                todo.append((app, item, obj))
        self._record_all(report, todo, list(pool.map(lambda x: self._apply(x[2]), todo)), later)

    def _record_all(self, report: SyncReport, todo: Later, errors: list[ApiError | None], later: Later | None) -> None:
        for (app, item, obj), error in zip(todo, errors):
            if error is None:
                report.applied += 1
                if obj.get("kind") == "CustomResourceDefinition":
                    self._applied_crd(obj)
            elif why := not_served(self.served, obj, _missing_kind(error)):
                report.refused.append(Refusal(app, item, error.status, NOT_SERVED, why))
            elif later is not None and _missing_kind(error):
                later.append((app, item, obj))
            else:
                report.refused.append(Refusal(app, item, error.status, error.reason, _explain(error)))

    def _held(self, obj: dict[str, Any]) -> bool:
        """A CRD this box holds exactly as given (applied by this process)."""
        return obj.get("kind") == "CustomResourceDefinition" and self.crds_applied.get(obj["metadata"]["name"]) == _digest(obj)

    def _applied_crd(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        with self._guard:
            self._crds[(str(spec.get("group")), str((spec.get("names") or {}).get("kind")))] = crd["metadata"]["name"]
            self.crds_applied[crd["metadata"]["name"]] = _digest(crd)

    def _apply(self, obj: dict[str, Any]) -> ApiError | None:
        crd = self._crds.get(_served_kind(obj))
        if crd is not None:  # a custom resource of a CRD this sync applied: it must be served first
            self._established(crd)
        deadline = time.monotonic() + RETRY_SECONDS
        timeouts = 0
        while True:
            try:
                if obj.get("kind") == "CustomResourceDefinition":
                    with self._heavy:
                        self.kube.apply(obj)
                else:
                    self.kube.apply(obj)
                return None
            except ApiError as exc:
                timeouts += exc.reason == "Timeout"
                if not _transient(exc) or (time.monotonic() > deadline and not 0 < timeouts < TIMEOUT_ATTEMPTS):
                    return exc
            time.sleep(0.5)

    def _established(self, name: str) -> None:
        """Wait (briefly) until the API server serves the CRD's kinds; once per CRD (the threads
        that need it meanwhile wait for the one that asks)."""
        with self._guard:
            lock = self._crd_locks.setdefault(name, threading.Lock())
        with lock:
            if name not in self._crds.values():
                return  # seen Established by another thread
            deadline = time.monotonic() + ESTABLISH_SECONDS
            while time.monotonic() < deadline:
                found = self.kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name) or {}
                if any(c.get("type") == "Established" and c.get("status") == "True"
                       for c in (found.get("status") or {}).get("conditions") or []):
                    break
                time.sleep(0.05)
            with self._guard:
                self._crds = {k: v for k, v in self._crds.items() if v != name}


def _digest(obj: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def _missing_kind(exc: ApiError) -> bool:
    return exc.status == 404 and "the server has no kind" in exc.message


def _transient(exc: ApiError) -> bool:
    """A webhook not yet serving, a server catching its breath (a request that timed out on a
    loaded machine): Argo CD's retry would succeed, so the box retries too."""
    text = exc.message
    return ("failed calling webhook" in text or exc.status in (429, 503, 504) or exc.reason == "Timeout"
            or "could not find the requested resource" in text)


def _explain(exc: ApiError) -> str:
    causes = "; ".join(f"{c.get('field', '')}: {c.get('message', '')}".strip(": ") for c in exc.causes)
    return exc.message if not causes or causes in exc.message else f"{exc.message} [{causes}]"


class Wiring:
    """How objects meet the box: which the box replaces or cannot serve, and how it rewrites them."""

    def __init__(self, served_webhooks: dict[tuple[str, str], int], replaced: dict[tuple[str, str, str], str],
                 karpenter: bool = False) -> None:
        # (service namespace, service name) -> the 127.0.0.1 port its server listens on in the box
        self.served = served_webhooks
        # (kind, namespace, name) -> why the box applies its own instead
        self.replaced = replaced
        # the box runs Karpenter with its kwok provider (a cloud cluster's box, forge.twin.karpenter)
        self.karpenter = karpenter

    def rewrite(self, obj: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
        """An object as the box applies it and the change (in the sync's report), or None: where
        Karpenter runs, a NodePool as forge.twin.karpenter.box_node_pool makes it."""
        if self.karpenter and obj.get("kind") == "NodePool" and str(obj.get("apiVersion", "")).startswith("karpenter.sh/"):
            return box_node_pool(obj)
        return None

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
