"""Alluxio worker pools for clusters whose NVMe nodes differ (paths, sizes, RAM).

Chart 0.6.54 has one worker DaemonSet with one `tieredstore` layout, and Alluxio 2.9 reads the
tier paths and quotas from that release's ConfigMap (ALLUXIO_WORKER_JAVA_OPTS), the same for
every pod. Of the ways to give each node its own layout:
- per-node properties: Alluxio 2.x has none (a DaemonSet's pods all get one ConfigMap, and no
  pod field can carry a node's drive list);
- a worker DaemonSet per pool written by forge: a second copy of the chart's worker pod spec,
  to keep in step with every chart bump by hand;
- a second release of the same pinned chart per pool with the masters off (`master.enabled:
  false`, `proxy.enabled: false`): the chart renders only its ConfigMap and worker DaemonSet,
  named by its own `fullnameOverride` (alluxio-<profile>-config, alluxio-<profile>-worker), with
  that pool's tiers, node selector and memory.
forge does the last. The pool releases are more chart sources of the one Alluxio Application
(values-<release>.yaml beside values.yaml), so they sync, prune and are hydrated with it. Their
workers must find the main release's masters: the chart writes the embedded-journal addresses
from its own fullname, so `properties` repeats the masters' real addresses; properties come
after the chart's own options on the JVM command line, and the last -D of a key wins.
The main release keeps the first pool's workers (its DaemonSet narrowed to that profile).
"""
from __future__ import annotations

from typing import Any

from forge.components.alluxio.layout import WorkerPool
from forge.model.cluster import LABEL_DOMAIN, NVME_LABEL, ClusterModel

MASTER_EMBEDDED_PORT = 19200  # the chart's master.ports.embedded (not changed by forge)
MASTER_RPC_PORT = 19998  # the chart's master.ports.rpc
PROFILE_LABEL = f"{LABEL_DOMAIN}/profile"


def worker_selector(pool: WorkerPool) -> dict[str, str]:
    """Where a pool's workers run: the NVMe nodes, of its profile when pools differ."""
    return {NVME_LABEL: "true", **({PROFILE_LABEL: pool.profile} if pool.profile else {})}


def worker_tolerations(cluster: ClusterModel, pool: WorkerPool) -> list[dict[str, str]]:
    if pool.profile is None:
        return cluster.nvme_tolerations
    return cluster.tolerations_for(n for n in cluster.nvme_nodes if n.name in pool.nodes)


def master_addresses(main_release: str, masters: int) -> dict[str, str]:
    """The main release's masters (pods <release>-master-<i>, each behind its own Service)."""
    names = [f"{main_release}-master-{i}" for i in range(masters)]
    return {"alluxio.master.embedded.journal.addresses": ",".join(f"{n}:{MASTER_EMBEDDED_PORT}" for n in names),
            "alluxio.master.rpc.addresses": ",".join(f"{n}:{MASTER_RPC_PORT}" for n in names)}


def pool_values(main: dict[str, Any], pool: WorkerPool, worker: dict[str, Any], tiers: list[dict[str, Any]],
                main_release: str, masters: int) -> dict[str, Any]:
    """A worker-only release's values: the main release's image, identity, properties, secrets
    and job-worker settings; its own name, workers and tiers; no masters, proxies or journal."""
    return {
        "fullnameOverride": pool.release,  # the chart's default is `alluxio`: objects would collide
        "image": main["image"],
        "imageTag": main["imageTag"],
        "user": main["user"],
        "group": main["group"],
        "fsGroup": main["fsGroup"],
        "properties": {**main["properties"], **master_addresses(main_release, masters)},
        "secrets": {"worker": main["secrets"]["worker"]},
        # The chart writes the embedded-journal address list only for an EMBEDDED journal with
        # more than one master: the same shape as the main release (its addresses are replaced
        # through properties above).
        "master": {"enabled": False, "count": masters},
        "journal": {"type": "EMBEDDED"},
        "worker": worker,
        "jobWorker": main["jobWorker"],
        "tieredstore": {"levels": tiers},
        "shortCircuit": main["shortCircuit"],
        "proxy": {"enabled": False},  # the main release's proxies run on every NVMe node
        "metrics": main["metrics"],
    }
