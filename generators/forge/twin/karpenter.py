"""Karpenter in the box: the real Karpenter core (ci/tools.json twin.karpenter-box) with its kwok
cloud provider makes and removes a cloud cluster's nodes from forge's rendered NodePools. A cloud
cluster's box starts it after Kueue (forge.twin.box), a process of the box like the others, and
makes only the system pool's nodes (forge.twin.nodes): every other node is Karpenter's.

The provider launches no instance: a NodeClaim becomes a Node object annotated
`kwok.x-k8s.io/node: fake`, which the box's kwok takes and keeps Ready (forge.twin.controlplane),
and deleting the NodeClaim deletes the Node. What it offers is a list of instance types, written
here from forge's hardware catalogue (generators/forge/facts/catalogue/hardware.yaml) into the box's
folder: for each instance type a Karpenter pool of the cluster uses, its CPUs, memory, pods,
GPUs and EFA interfaces, and an offering per capacity type those pools ask for, in one zone of the
cluster's region, at the catalogue's on-demand price (0 where it has none: spot prices, p5e).

Box-only rewrites, each said as it is made (the box's sync applies the NodePools rewritten,
forge.twin.sync.Wiring, and lists each change):
- NodePools point to a KWOKNodeClass of the same name instead of their EC2NodeClass (the provider
  serves only KWOKNodeClass, and nodeClassRef's group and kind are immutable, so the sync must
  apply them so from the first);
- `consolidateAfter` is CONSOLIDATE_AFTER, so that an empty node goes in seconds, not 10-30 min;
- a pool of capacity type `reserved` asks `on-demand` instead: the kwok provider knows no capacity
  reservations (its main package sets no reservation-ID label, which Karpenter's reserved offerings
  need), so on-demand offerings of the same instance type stand for the reservation, within the
  pool's own limits and weight.

Karpenter binds its health and metrics servers to every interface (":8081"): it runs in the
box's jail (forge.twin.jail), its own network namespace, and reaches the API server through a
Unix socket.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from forge.errors import ForgeError
from forge.model.cluster import ClusterModel
from forge.twin.binaries import ensure_program
from forge.twin.controlplane import kubeconfig_text
from forge.twin.jail import TcpToUnix, UnixToTcp
from forge.twin.kube import Kube
from forge.twin.pki import Pki
from forge.twin.processes import Process, free_ports, start, stop_all, wait_until
from forge.twin.sources import Application

Say = Callable[[str], None]
PROGRAM = "karpenter-box"
BINARY = "kwok"  # Go names the binary after its package, sigs.k8s.io/karpenter/kwok
KWOK_GROUP, KWOK_VERSION, KWOK_KIND = "karpenter.kwok.sh", "v1alpha1", "KWOKNodeClass"
CONSOLIDATE_AFTER = "5s"  # box only: forge's pools say 10m (cpu) and 30m (gpu)
NAMESPACE = "karpenter"  # forge.components.karpenter's, the chart's SYSTEM_NAMESPACE
HEALTH_PORT = 8081  # inside the jail (Karpenter's default)
READY_TIMEOUT = 120.0
EXTENDED = {"gpu_count": "nvidia.com/gpu", "efa_interfaces": "vpc.amazonaws.com/efa"}
DEFAULT_PODS = 110  # the kwok provider's own default, where the catalogue has no max_pods
CAPACITY_TYPE = "karpenter.sh/capacity-type"
NODECLAIM = ("karpenter.sh/v1", "NodeClaim")
HEARTBEAT_SECONDS = 10
# box only: the capacity type the box offers for one a pool asks (the module's docstring)
BOX_CAPACITY_TYPE = {"reserved": "on-demand"}


def zone(cluster: ClusterModel) -> str:
    """The one zone the box offers: the region's first (on AWS the EC2NodeClass's subnets decide)."""
    return f"{cluster.cloud.region}a"


def instance_types(cluster: ClusterModel) -> list[dict[str, Any]]:
    """The kwok provider's instance types (its INSTANCE_TYPES_FILE_PATH format) for the instance
    types of the cluster's Karpenter pools, from the hardware catalogue; sorted, so the file is
    the same for the same inventory."""
    asked: dict[str, tuple[Any, set[str]]] = {}
    for pool in cluster.pools:
        if pool.karpenter:
            offered = BOX_CAPACITY_TYPE.get(pool.capacity_type, pool.capacity_type)
            asked.setdefault(pool.instance.key, (pool.instance, set()))[1].add(offered)
    out = []
    for key, (inst, capacity_types) in sorted(asked.items()):
        resources = {"cpu": str(inst.cpu_threads), "memory": f"{inst.memory_gib}Gi",
                     "pods": str(inst.max_pods or DEFAULT_PODS)}
        resources |= {name: str(getattr(inst, attr)) for attr, name in EXTENDED.items() if getattr(inst, attr)}
        offerings = [{"Price": (inst.on_demand_usd_per_hour or 0.0) if ct == "on-demand" else 0.0,
                      "Available": True,
                      "Requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": [ct]},
                                       {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone(cluster)]}]}
                     for ct in sorted(capacity_types)]
        if offerings:
            out.append({"name": key, "offerings": offerings, "architecture": "amd64",
                        "operatingSystems": ["linux"], "resources": resources})
    return out


def write_instance_types(cluster: ClusterModel, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "instance-types.json"
    path.write_text(json.dumps(instance_types(cluster), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def box_node_pool(obj: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A rendered NodePool as the box applies it (the module's docstring), and what was changed."""
    pool = copy.deepcopy(obj)
    spec = pool["spec"]["template"]["spec"]
    ref = spec["nodeClassRef"]
    spec["nodeClassRef"] = {"group": KWOK_GROUP, "kind": KWOK_KIND, "name": ref["name"]}
    changes = [f"nodeClassRef {ref.get('kind')} -> {KWOK_KIND} {ref['name']}"]
    before = (obj["spec"].get("disruption") or {}).get("consolidateAfter")
    pool["spec"].setdefault("disruption", {})["consolidateAfter"] = CONSOLIDATE_AFTER
    changes.append(f"consolidateAfter {before} -> {CONSOLIDATE_AFTER}")
    for req in spec.get("requirements") or []:
        if req.get("key") == CAPACITY_TYPE and set(req.get("values") or []) & set(BOX_CAPACITY_TYPE):
            was = list(req["values"])
            req["values"] = sorted({BOX_CAPACITY_TYPE.get(v, v) for v in was})
            changes.append(f"capacity-type {','.join(was)} -> {','.join(req['values'])} (the kwok provider "
                           "knows no capacity reservations)")
    return pool, "; ".join(changes)


def _established(kube: Kube, api_version: str, kind: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while kube.resource(api_version, kind) is None:
        if time.monotonic() > deadline:
            raise ForgeError(f"twin karpenter: the API server does not serve {kind} ({api_version}) "
                             f"{timeout:.0f}s after its CRD was applied")
        time.sleep(0.3)


@dataclass
class Karpenter:
    """Karpenter running against a box that is up; `close` stops it (and its relays)."""

    procs: list[Process] = field(default_factory=list)
    relays: list[TcpToUnix | UnixToTcp] = field(default_factory=list)
    pools: list[str] = field(default_factory=list)  # the NodePools Karpenter makes nodes for

    def close(self) -> None:
        stop_all(self.procs)
        for relay in self.relays:
            relay.shutdown()
            relay.server_close()
            if isinstance(relay, UnixToTcp):
                Path(relay.server_address).unlink(missing_ok=True)  # type: ignore[arg-type]
        self.procs, self.relays = [], []


def karpenter_app(apps: list[Application]) -> Application | None:
    """The cluster's karpenter Application (a cloud cluster's), else None."""
    return next((a for a in apps if a.component == "karpenter"), None)


def prepare(kube: Kube, app: Application, crds: Path) -> list[str]:
    """Karpenter's CRDs, the KWOKNodeClass CRD and a KWOKNodeClass per EC2NodeClass the NodePools
    name; returns those classes' names. The NodePools come with the box's sync, rewritten."""
    for item in app.items:  # as the sync applies them (the box's start applied them already: the same)
        if item.obj.get("kind") == "CustomResourceDefinition":
            kube.apply(item.obj)
    for path in sorted(crds.glob("*.yaml")):
        kube.apply(yaml.safe_load(path.read_text(encoding="utf-8")), manager="forge-twin")
    _established(kube, f"{KWOK_GROUP}/{KWOK_VERSION}", KWOK_KIND)
    _established(kube, "karpenter.sh/v1", "NodePool")
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}, manager="forge-twin")
    pools = [i.obj for i in app.items if i.obj.get("kind") == "NodePool"]
    classes = sorted({p["spec"]["template"]["spec"]["nodeClassRef"]["name"] for p in pools})
    for name in classes:
        # Ready as soon as created: the CRD defaults its status to a Ready condition (on AWS the
        # EC2NodeClass controller sets Ready once subnets, security groups, AMI and role resolve).
        kube.apply({"apiVersion": f"{KWOK_GROUP}/{KWOK_VERSION}", "kind": KWOK_KIND, "metadata": {"name": name},
                    "spec": {}}, manager="forge-twin")
    return classes


def start_karpenter(root: Path, cluster: ClusterModel, app: Application, kube: Kube, state: Path, server_port: int,
                    say: Say) -> Karpenter:
    """Build (once) and start Karpenter in a cloud cluster's box (state: its folder)."""
    started = time.monotonic()
    binary = ensure_program(root, PROGRAM, say)[BINARY]
    work = state / "karpenter"
    types = write_instance_types(cluster, work)
    running = Karpenter()
    try:
        running.pools = sorted(i.obj["metadata"]["name"] for i in app.items if i.obj.get("kind") == "NodePool")
        classes = prepare(kube, app, binary.parent / "data" / "kwok" / "apis" / "crds")
        say(f"twin karpenter: box-only: {KWOK_KIND} {', '.join(classes)} (the kwok provider serves no EC2NodeClass); "
            f"the box makes no node of pools {', '.join(running.pools)}: Karpenter makes them")
        unshare = shutil.which("unshare")
        if unshare is None:
            raise ForgeError("twin karpenter: Karpenter listens on every interface and runs in its own network "
                             "namespace: it needs `unshare` (util-linux): install it")
        pki = Pki(state / "pki")
        api_sock, health_sock = _socket(work, "api"), _socket(work, "health")
        (health_port,) = free_ports(1)
        running.relays = [UnixToTcp(api_sock, server_port), TcpToUnix(health_port, health_sock)]
        for relay in running.relays:
            relay.serve_in_background()
        kubeconfig = work / "kubeconfig"
        kubeconfig.write_text(kubeconfig_text(f"https://127.0.0.1:{server_port}", pki), encoding="utf-8")
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "SYSTEM_NAMESPACE": NAMESPACE,
               # Karpenter refuses an API server older than this: the box's own, so it always starts
               "KUBERNETES_MIN_VERSION": f"{_version(root, 'kubernetes').lstrip('v')}-0", "DISABLE_LEADER_ELECTION": "true",
               "INSTANCE_TYPES_FILE_PATH": str(types), "HEALTH_PROBE_PORT": str(HEALTH_PORT),
               "LOG_LEVEL": "debug"}
        cmd = [unshare, "--net", "--mount", "--", sys.executable, "-m", "forge.twin.jail",
               "--reach", f"{api_sock}:{server_port}", "--expose", f"{HEALTH_PORT}:{health_sock}", "--", str(binary)]
        proc = start("karpenter", cmd, state / "logs", env=env)
        running.procs.append(proc)
        wait_until(lambda: _http_ok(f"http://127.0.0.1:{health_port}/readyz"), proc, "ready", READY_TIMEOUT)
        say(f"twin karpenter: Karpenter {_version(root)} (kwok provider) ready in {time.monotonic() - started:.1f}s; "
            f"instance types {types}; log {proc.log}")
        return running
    except BaseException:
        running.close()
        raise


def _version(root: Path, program: str = PROGRAM) -> str:
    from forge.twin.pins import box_pins

    return box_pins(root).program(program).version


def _socket(folder: Path, name: str) -> str:
    path = folder / f"{name}.sock"
    if len(str(path)) > 100:  # AF_UNIX paths are limited to 108 bytes
        path = Path(tempfile.mkdtemp(prefix="forge-twin-")) / f"{name}.sock"
    return str(path)


def _http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (127.0.0.1 only)
            return response.status == 200
    except (OSError, ValueError):
        return False


# ---- the check: a pending pod makes a node, and the node goes when the pod does -------------------

@dataclass
class Burst:
    node_claim: str
    node: str
    made_seconds: float  # pod created -> its node Ready and the pod bound
    removed_seconds: float | None = None  # pod deleted -> NodeClaim and Node gone


def pending_pod(pool: dict[str, Any], name: str, namespace: str) -> dict[str, Any]:
    """A pod that only a node of `pool` takes: its template's labels as nodeSelector, its taints
    tolerated, and the whole node's GPUs requested (one CPU where it has none)."""
    template = pool["spec"]["template"]
    labels = (template.get("metadata") or {}).get("labels") or {}
    tolerations = [{"key": t["key"], "operator": "Exists", "effect": t["effect"]} for t in template["spec"].get("taints") or []]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"nodeSelector": {**labels, "karpenter.sh/nodepool": pool["metadata"]["name"]},
                     "tolerations": tolerations, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}


def _ready(node: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (node.get("status") or {}).get("conditions") or [])


def burst(kube: Kube, pool: dict[str, Any], gpus: int, say: Say, timeout: float = 180.0,
          namespace: str = "default", name: str = "karpenter-burst") -> Burst:
    """Create a pod that fits only `pool`, wait for Karpenter's NodeClaim and its Ready Node with
    the pod bound to it; delete the pod, wait for both to go (consolidation of an empty node)."""
    pod = pending_pod(pool, name, namespace)
    if gpus:
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)},
                                                     "limits": {"nvidia.com/gpu": str(gpus)}}
    pool_name = pool["metadata"]["name"]
    started = time.monotonic()
    kube.create(pod)
    deadline = started + timeout
    while True:
        claims = kube.list("karpenter.sh/v1", "NodeClaim", selector=f"karpenter.sh/nodepool={pool_name}")
        bound = (kube.get("v1", "Pod", name, namespace) or {}).get("spec", {}).get("nodeName")
        node = kube.get("v1", "Node", bound) if bound else None
        if claims and node and _ready(node):
            made = Burst(claims[0]["metadata"]["name"], bound, time.monotonic() - started)
            say(f"twin karpenter: pod {namespace}/{name} pending -> NodeClaim {made.node_claim} -> Node {bound} "
                f"Ready, pod bound, {made.made_seconds:.1f}s after the pod was created")
            break
        if time.monotonic() > deadline:
            raise ForgeError(f"twin karpenter: no Ready node of pool {pool_name} for pod {namespace}/{name} after "
                             f"{timeout:.0f}s (NodeClaims: {[c['metadata']['name'] for c in claims]}; events: "
                             f"{list(kube.events_for(namespace, name))[-3:]})")
        time.sleep(0.5)
    deleted = time.monotonic()
    kube.delete("v1", "Pod", name, namespace)
    while True:
        claims = kube.list("karpenter.sh/v1", "NodeClaim", selector=f"karpenter.sh/nodepool={pool_name}")
        if not claims and kube.get("v1", "Node", made.node) is None:
            made.removed_seconds = time.monotonic() - deleted
            say(f"twin karpenter: pod deleted -> NodeClaim and Node {made.node} removed "
                f"{made.removed_seconds:.1f}s later (consolidateAfter {CONSOLIDATE_AFTER}, box only)")
            return made
        if time.monotonic() > deleted + timeout:
            raise ForgeError(f"twin karpenter: node {made.node} of pool {pool_name} still there {timeout:.0f}s "
                             f"after its only pod was deleted (NodeClaims: {[c['metadata']['name'] for c in claims]})")
        time.sleep(0.5)


def rendered_pool(apps: list[Application], name: str) -> dict[str, Any]:
    app = karpenter_app(apps)
    if app is None:
        raise ForgeError("twin karpenter: the cluster has no karpenter component (a cloud cluster's): nothing to run")
    for item in app.items:
        if item.obj.get("kind") == "NodePool" and item.obj["metadata"]["name"] == name:
            return item.obj
    raise ForgeError(f"twin karpenter: no NodePool {name} in the rendered output")


def nodes_removed(kube: Kube, started: float, seconds: float, say: Say) -> tuple[str, bool]:
    """After a scenario's cleanup (begun at `started`, time.monotonic()): wait until Karpenter has
    removed every node it made (no NodeClaim, no Node of a NodePool); (what it did, for the
    scenario's outcome, '' if it made none; whether they went within `seconds`)."""
    made = len(kube.list(*NODECLAIM))
    said = time.monotonic()
    while True:
        claims = kube.list(*NODECLAIM)
        nodes = kube.list("v1", "Node", selector="karpenter.sh/nodepool")
        now = time.monotonic()
        if not claims and not nodes:
            return (f"cleanup: {made} Karpenter nodes, the last removed {now - started:.1f}s after the scenario's "
                    "jobs were deleted" if made else ""), True
        if now - started > seconds:
            return (f"cleanup: {len(claims)} NodeClaims and {len(nodes)} Karpenter nodes (of {made}) still there "
                    f"{seconds:.0f}s after the scenario's jobs were deleted"), False
        if now - said >= HEARTBEAT_SECONDS:
            said = now
            say(f"twin run: waiting {now - started:.0f}s for Karpenter to remove {len(claims)} NodeClaims")
        time.sleep(2.0)
