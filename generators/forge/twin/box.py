"""One cluster's box: its state folder (`build/twin/<cluster>/`: certificates, kubeconfig, logs,
etcd's data, state.json), its processes, and the order they start in:

1. the programs, built or found in the cache (forge.twin.binaries);
2. etcd and kube-apiserver; then kube-controller-manager, kube-scheduler and kwok;
3. the inventory's Node objects (forge.twin.nodes), Ready once kwok takes them: on a cloud
   cluster only the system pool's (its managed node group);
4. the Namespaces and CRDs the box's controllers need, from their Applications, applied as
   Argo CD would (forge.twin.sync); then Kueue and the training-operator;
5. on a cloud cluster, Karpenter with its kwok provider (forge.twin.karpenter), which makes the
   other pools' nodes for pending pods and removes them once empty.
`forge twin apply` then syncs every Application. The box ends with the process that owns it: the
`forge twin` command itself, or, after `forge twin up`, a detached supervisor that `forge twin
down` stops (forge.twin.supervise).
"""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from forge.diff.amounts import quantity
from forge.errors import ForgeError
from forge.fleet import ClusterPlan
from forge.twin.binaries import ensure_binaries
from forge.twin.controllers import Controllers
from forge.twin.controlplane import ControlPlane, Ports
from forge.twin.karpenter import PROGRAM as KARPENTER_PROGRAM, Karpenter, karpenter_app, start_karpenter
from forge.twin.kube import Kube, connect
from forge.twin.nodes import node_objects
from forge.twin.pins import box_pins
from forge.twin.pki import Pki, make_pki
from forge.twin.processes import stop_all
from forge.twin.sources import Application, applications, chart_crds
from forge.twin.sync import Syncer

TWIN_DIR = Path("build/twin")
STATE_FILE = "state.json"
NODES_READY_TIMEOUT = 120.0
Say = Callable[[str], None]


@dataclass
class BoxState:
    """What another `forge twin` process needs to use a running box."""

    cluster: str
    server: str
    kubeconfig: str
    supervisor_pid: int
    pids: dict[str, int]
    kueue_webhook_port: int
    nfd_findings: list[str] = field(default_factory=list)
    ready: bool = False
    error: str = ""
    karpenter: bool = False  # Karpenter runs in the box (a cloud cluster's): NodePools are applied rewritten
    # CRD name -> digest of what `up` applied, for this process's first sync only (never saved:
    # another process cannot know that nothing changed them since).
    start_crds: dict[str, str] = field(default_factory=dict)

    def save(self, folder: Path) -> None:
        tmp = folder / (STATE_FILE + ".tmp")
        data = asdict(self)
        del data["start_crds"]
        tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
        tmp.replace(folder / STATE_FILE)

    @classmethod
    def load(cls, folder: Path) -> "BoxState | None":
        try:
            return cls(**json.loads((folder / STATE_FILE).read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None


def box_syncer(kube: Kube, state: "BoxState", plan: ClusterPlan, say: Callable[[str], None]) -> Syncer:
    """The Syncer every command applies a cluster's output with: the box's Kueue webhook wired in,
    and only what the cluster serves accepted (`forge bench` times the same apply `forge twin run` does).
    The first one made after `up` takes the CRDs `up` applied (later ones cannot know them unchanged)."""
    start, state.start_crds = state.start_crds, {}
    return Syncer(kube, Controllers.wiring_for(state.kueue_webhook_port, state.karpenter), say, plan.cluster.served, start)


def state_folder(root: Path, cluster: str) -> Path:
    return root / TWIN_DIR / cluster


def _check_version(plan: ClusterPlan, minor: str) -> None:
    if plan.cluster.kubernetes_version != minor:
        raise ForgeError(f"{plan.cluster.source}: cluster.kubernetes_version is {plan.cluster.kubernetes_version!r}, "
                         f"but the box runs Kubernetes {minor} (ci/tools.json twin.kubernetes): the box cannot stand "
                         "for this cluster until both say the same")


def _subset(app: Application, kinds: tuple[str, ...]) -> Application:
    return Application(app.name, app.component, app.wave, app.hydrated, [i for i in app.items if i.obj.get("kind") in kinds])


CONTROLLER_CRDS = ("kueue", "training-operator", "kuberay-operator")  # the box's controllers need them to start


class _Background:
    """A call run in a thread; join() re-raises what it raised."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(call,), name="twin-early-crds", daemon=True)
        self.thread.start()

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            call()
        except BaseException as exc:  # handed to join()
            self.error = exc

    def join(self) -> None:
        self.thread.join()
        if self.error is not None:
            raise self.error


class Box:
    def __init__(self, root: Path, plan: ClusterPlan, upstream: Path | None, say: Say) -> None:
        self.root, self.plan, self.upstream, self.say = root.resolve(), plan, upstream, say
        self.state = state_folder(self.root, plan.name)
        self.control: ControlPlane | None = None
        self.controllers: Controllers | None = None
        self.karpenter: Karpenter | None = None
        self.info: BoxState | None = None

    def _stage(self, what: str, started: float) -> None:
        self.say(f"twin up {self.plan.name}: {what} ({time.monotonic() - started:.1f}s)")

    def up(self) -> BoxState:
        started = time.monotonic()
        pins = box_pins(self.root)
        _check_version(self.plan, pins.kubernetes_minor)
        apps = {a.component: a for a in applications(self.root, self.plan, self.upstream, None)}
        binaries = ensure_binaries(self.root, pins, self.say)
        self._stage("programs ready", started)
        shutil.rmtree(self.state, ignore_errors=True)
        self.state.mkdir(parents=True)
        pki = make_pki(self.state / "pki")
        self.control = ControlPlane(self.state, binaries, pki, Ports.pick(), self.state / "etcd", self.plan.cluster.served)
        self.control.start_api()
        self._stage(f"etcd and kube-apiserver {pins.kubernetes.version} ready at {self.control.server}", started)
        self.control.start_controllers()
        self._stage("kube-controller-manager, kube-scheduler and kwok ready", started)
        kube = connect(self.control.server, pki.token(), pki.ca)
        made, findings = self._nodes(kube, apps, pins.kubernetes.version)
        self._stage(f"{made} nodes Ready", started)
        self.controllers = Controllers(self.root, self.state, binaries, pki, self.control.ports.apiserver)
        prerequisites = ("Namespace", "CustomResourceDefinition")
        syncer = Syncer(kube, self.controllers.wiring(), lambda line: None)
        for component in CONTROLLER_CRDS:
            if component in apps:
                syncer.sync([_subset(apps[component], prerequisites)])
        # Every other Application's CRDs go in while Kueue and the training-operator start (most of
        # that is their waiting: webhook certificates, caches), through the same server-side apply;
        # the sync sends them again only if they changed. The API server's work on a CRD (schemas,
        # CEL, OpenAPI) was most of the apply time.
        rest = Syncer(kube, self.controllers.wiring(), lambda line: None)
        early = _Background(lambda: rest.sync([_subset(a, prerequisites) for c, a in apps.items() if c not in CONTROLLER_CRDS]))
        if "kueue" in apps:
            values = self.root / "overlays" / self.plan.name / "kueue" / "values.yaml"
            self.controllers.start_kueue(kube, apps["kueue"], values)
            self._stage(f"Kueue {pins.program('kueue').version} ready", started)
        operator = self.plan.component("training-operator")
        if operator is not None:
            self.controllers.start_training_operator(kube, apps[operator.name], operator.namespace)
            self._stage(f"training-operator {pins.program('training-operator').version} ready", started)
        early.join()
        self._stage(f"{len(rest.crds_applied)} more CRDs applied meanwhile", started)
        cloud = karpenter_app(list(apps.values()))
        if cloud is not None:
            self.karpenter = start_karpenter(self.root, self.plan.cluster, cloud, kube, self.state,
                                             self.control.ports.apiserver, self.say)
            self._stage(f"Karpenter {pins.program(KARPENTER_PROGRAM).version} ready", started)
        procs = self.control.procs + self.controllers.procs + (self.karpenter.procs if self.karpenter else [])
        self.info = BoxState(self.plan.name, self.control.server, str(self.control.kubeconfig), os.getpid(),
                             {p.name: p.pid for p in procs}, self.controllers.kueue_webhook_port, findings, ready=True,
                             karpenter=self.karpenter is not None,
                             start_crds={**syncer.crds_applied, **rest.crds_applied})
        self.info.save(self.state)
        kube.close()
        return self.info

    def _nodes(self, kube: Kube, apps: dict[str, Application], version: str) -> tuple[int, list[str]]:
        rules = [(i.obj, i.where) for a in apps.values() for i in a.items if i.obj.get("kind") == "NodeFeatureRule"]
        nodes, findings = node_objects(self.plan.cluster, rules, version, self.plan.components)
        register_nodes(kube, nodes)
        deadline = time.monotonic() + NODES_READY_TIMEOUT
        while True:
            ready = [n for n in kube.list("v1", "Node") if any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in (n.get("status") or {}).get("conditions") or [])]
            if len(ready) == len(nodes):
                wrong = nodes_not_as_made(nodes, ready)
                if wrong:
                    raise ForgeError(f"twin: {len(wrong)} node(s) Ready without the resources the box gave them: "
                                     f"{'; '.join(wrong[:5])} (see {self.state / 'logs' / 'kwok.log'})")
                return len(nodes), findings
            if time.monotonic() > deadline:
                raise ForgeError(f"twin: {len(ready)} of {len(nodes)} nodes Ready after {NODES_READY_TIMEOUT:.0f}s: "
                                 f"kwok does not take them (see {self.state / 'logs' / 'kwok.log'})")
            time.sleep(0.3)

    def down(self) -> None:
        """Stop every process, newest first (the controllers before the API server they call)."""
        if self.karpenter:
            self.karpenter.close()
        started_in_order = (self.control.procs if self.control else []) + (self.controllers.procs if self.controllers else [])
        stop_all(started_in_order)
        if self.controllers:
            self.controllers.close()
        shutil.rmtree(self.state / "etcd", ignore_errors=True)


def register_nodes(kube: Kube, nodes: list[dict[str, Any]]) -> None:
    """Each Node created with its status in the one request, as a kubelet registers its node.
    kwok's node-initialize stage (kwokctl's, forge.twin.controlplane) keeps the capacity and
    allocatable a node has when kwok first sees it, and writes its own over a node that has none
    (cpu 1k, memory 1Ti, pods 1M). A node created bare and given its status by a second request
    raced kwok: now and then kwok saw it bare and its status write landed after the box's, and that
    node stood with 1Ti of memory, 1000 CPUs and the GPUs but no 2Ti (a 100-node job on a
    100-node pool then fitted only 99)."""
    for node in nodes:
        kube.create(node)


def nodes_not_as_made(made: list[dict[str, Any]], listed: list[dict[str, Any]]) -> list[str]:
    """What differs between the capacity and allocatable the box gave each node (`made`) and what
    the API server holds (`listed`): `node: allocatable memory 1Ti, not 2048Gi`."""
    served = {n["metadata"]["name"]: n.get("status") or {} for n in listed}
    out = []
    for node in made:
        name, want = node["metadata"]["name"], node["status"]
        have = served.get(name, {})
        for field_ in ("capacity", "allocatable"):
            for resource in sorted(set(want.get(field_) or {}) | set(have.get(field_) or {})):
                w, h = (want.get(field_) or {}).get(resource), (have.get(field_) or {}).get(resource)
                if w is None or h is None or quantity(w) != quantity(h):
                    out.append(f"{name}: {field_} {resource} {h or 'absent'}, not {w or 'absent'}")
    return out


@contextmanager
def running_box(root: Path, plan: ClusterPlan, upstream: Path | None, say: Say) -> Iterator[BoxState]:
    """A box that lives as long as the `with` block (and dies with this process)."""
    box = Box(root, plan, upstream, say)
    failed = True
    try:
        yield box.up()
        failed = False
    finally:
        box.down()
        if failed and (box.state / "logs").is_dir():  # keep what the processes said, for the failure
            kept = box.state.with_name(f"{plan.name}-logs")
            shutil.rmtree(kept, ignore_errors=True)
            (box.state / "logs").rename(kept)
            say(f"twin: the box's logs are kept in {kept}")
        shutil.rmtree(box.state, ignore_errors=True)
