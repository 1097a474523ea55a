"""Alluxio's settings and what it derives from them and the nodes, once (AlluxioFacts): the worker
pools with their tier layouts (one pool unless NVMe profiles differ) and the site properties. The
component only reads these."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any, Iterator, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from forge.components.alluxio.mounts import READ_ONLY_KEYS
from forge.components.local_storage import DataPath
from forge.inventory.schema import Name, PositiveInt, Strict
from forge.model.cluster import ClusterModel

GIB = 2**30
ROOT_UFS = "/opt/alluxio/underFSStorage"  # Alluxio's default root, made read-only

# Alluxio properties each write policy sets. The proxy's own write type matters most: S3 clients
# (Flyte, training code) write through it.
WRITE_POLICY_PROPERTIES: dict[str, dict[str, str]] = {
    "CACHE_THROUGH": {
        "alluxio.user.file.writetype.default": "CACHE_THROUGH",
        "alluxio.proxy.s3.writetype": "CACHE_THROUGH",
    },
    "ASYNC_THROUGH": {
        "alluxio.user.file.writetype.default": "ASYNC_THROUGH",
        "alluxio.proxy.s3.writetype": "ASYNC_THROUGH",
        # Until the upload finishes the cache holds the only copy: keep it on two workers.
        "alluxio.user.file.replication.durable": "2",
    },
}
READ_POLICIES = ("CACHE", "CACHE_PROMOTE", "NO_CACHE")
# One vocabulary for the write policy, in the inventory, the README and the errors: Alluxio's own
# write types, the words its documentation, properties and logs use. The informal names (the seed
# document's "sync"/"async") are refused with the write type they mean.
WRITE_POLICY_ALIASES = {"sync": "CACHE_THROUGH", "async": "ASYNC_THROUGH"}


def _reserve(value: float) -> float:
    if not 0 <= value <= 0.9:
        raise ValueError(f"ssd_reserve {value} is outside 0-0.9: it is the fraction of each NVMe device kept free")
    return value


def _write_policy(value: object) -> object:
    if not isinstance(value, str) or value in WRITE_POLICY_PROPERTIES:
        return value
    word = value.strip()
    meant = WRITE_POLICY_ALIASES.get(word.lower()) or (word.upper() if word.upper() in WRITE_POLICY_PROPERTIES else None)
    if meant:
        raise ValueError(f"write_policy '{value}': write policies use Alluxio's write types; did you mean {meant}? "
                         f"(expected one of: {', '.join(WRITE_POLICY_PROPERTIES)})")
    return value


def _masters(value: int) -> int:
    if value < 3 or value % 2 == 0:
        raise ValueError(f"{value} masters: the embedded journal needs an odd number, at least 3, to keep a quorum when one fails")
    return value


class MemoryTier(Strict):
    fraction: Annotated[float, Field(gt=0, le=0.5)]  # of the node's RAM
    max_gib: PositiveInt  # the cap


def _backup_time(value: str) -> str:
    if not re.fullmatch(r"([01][0-9]|2[0-3]):[0-5][0-9]", value):
        raise ValueError(f"backup time '{value}' is not a UTC time of day as HH:MM on a 24-hour clock (00:00-23:59), e.g. \"05:00\"")
    return value


def _backup_directory(value: str) -> str:
    if not re.fullmatch(r"(/[A-Za-z0-9._-]+)+", value) or any(part in (".", "..") for part in value.split("/")):
        raise ValueError(f"backup directory '{value}' is not an absolute path in the backup bucket "
                         "(letters, digits, '.', '_', '-' between slashes), e.g. /alluxio-journal-backups")
    return value


class JournalBackup(Strict):
    """Alluxio's own daily journal backup (alluxio.master.daily.backup.*, Alluxio 2.9): the primary
    master writes `alluxio-backup-<date>-<ms>.gz` into `directory` of the root under-store at `time`
    UTC and keeps the newest `retained`. The root under-store becomes this bucket (still mounted
    read-only), so the backups land in S3, not on a master's disk."""

    bucket: Name  # a key of cluster.s3.buckets that Alluxio does not mount (components.alluxio.buckets)
    directory: Annotated[str, AfterValidator(_backup_directory)] = "/alluxio-journal-backups"
    time: Annotated[str, AfterValidator(_backup_time)] = "05:00"  # UTC, HH:MM (off-peak)
    retained: Annotated[int, Field(ge=1, le=365)] = 7  # backup files kept; older ones are deleted
    # A backup file of `directory` (alluxio-backup-<date>-<ms>.gz) a freshly formatted journal is
    # restored from (alluxio.master.journal.init.from.backup); ignored by a journal with state.
    restore_from: Annotated[str, Field(pattern=r"^alluxio-backup-[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]+\.gz$")] | None = None


class Journal(Strict):
    # None: cluster.storage_class. The journal wants a node-local class on the control plane.
    storage_class: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")] | None = None
    size_gib: PositiveInt = 50
    # A folder on the control-plane nodes for the journal: a local-path StorageClass of its own
    # (forge.components.local_storage) instead of storage_class.
    data_path: DataPath | None = None
    backup: JournalBackup | None = None  # None: no scheduled backup (docs/data-and-alerts.md)


WritePolicy = Annotated[Literal["CACHE_THROUGH", "ASYNC_THROUGH"], BeforeValidator(_write_policy)]
SYNCHRONOUS = "CACHE_THROUGH"


class AlluxioSettings(Strict):
    buckets: Annotated[list[Name], Field(min_length=1)]  # keys of cluster.s3.buckets
    write_policy: WritePolicy  # every listed bucket's, unless write_policies names it
    # Per bucket (a key of `buckets`): its own write type. A bucket of cluster.s3.durable must
    # write synchronously (CACHE_THROUGH).
    write_policies: dict[Name, WritePolicy] = {}
    read_policy: Literal["CACHE", "CACHE_PROMOTE", "NO_CACHE"] = "CACHE"
    ssd_reserve: Annotated[float, AfterValidator(_reserve)]
    memory_tier: MemoryTier
    masters: Annotated[int, AfterValidator(_masters)] = 3
    journal: Journal
    # How stale Alluxio's view of S3 may get (objects written to S3 directly): Alluxio duration.
    metadata_sync_interval: Annotated[str, Field(pattern=r"^(-1|0|[1-9][0-9]*(ms|s|min|h|d))$")] = "1min"
    # Files and folders Alluxio tracks (all mounted buckets): sizes the masters' heap (MasterSize).
    expected_files: PositiveInt = 10_000_000


@dataclass(frozen=True)
class SsdDir:
    path: str
    quota_gib: int


@dataclass(frozen=True)
class TierLayout:
    memory_bytes: int
    ssd: tuple[SsdDir, ...]


def ssd_quota_gib(size_gb: int, reserve: float) -> int:
    """floor(size_gb x 10^9 x (1 - reserve) / 2^30): decimal vendor GB in, whole GiB out.
    Decimal(str(...)) keeps 0.1 exactly 0.1."""
    usable = Decimal(size_gb) * 10**9 * (1 - Decimal(str(reserve)))
    return int(usable // GIB)


def memory_tier_gib(memory_gib: int, tier: MemoryTier) -> int:
    return min(int(Decimal(memory_gib) * Decimal(str(tier.fraction))), tier.max_gib)


def profile_layout(profile, settings: AlluxioSettings) -> TierLayout:
    """One node profile's tiers: every NVMe mount at its own device's size, and its memory tier."""
    ssd = tuple(SsdDir(d.mount, ssd_quota_gib(d.size_gb, settings.ssd_reserve)) for d in profile.nvme)
    return TierLayout(memory_tier_gib(profile.memory_gib, settings.memory_tier) * GIB, ssd)


@dataclass(frozen=True)
class WorkerPool:
    """The Alluxio workers of the nodes of one profile, with that profile's tier layout. On a
    cluster whose NVMe profiles all have one layout there is one pool for every NVMe node."""

    profile: str | None  # None: every NVMe node (one layout for all)
    release: str  # the Helm release whose worker DaemonSet serves the pool
    layout: TierLayout
    nodes: tuple[str, ...]


def worker_pools(cluster: ClusterModel, settings: AlluxioSettings, release: str) -> tuple[WorkerPool, ...]:
    """Workers by tier layout. The chart has one worker DaemonSet with one tier layout, so a
    cluster whose NVMe profiles differ (paths, sizes, RAM) gets one pool per profile, in the order
    of their first node: the first is served by the main release (`release`), each other one by a release of
    its own with the masters off (`<release>-<profile>`), so every drive is used at its size."""
    profiles: dict[str, list[str]] = {}
    for node in cluster.nvme_nodes:
        profiles.setdefault(node.profile_name, []).append(node.name)
    layouts = {name: profile_layout(next(n.profile for n in cluster.nvme_nodes if n.profile_name == name), settings)
               for name in profiles}
    if len(set(layouts.values())) == 1:  # one layout (every shipped fleet): one release on every NVMe node
        return (WorkerPool(None, release, next(iter(layouts.values())), tuple(n.name for n in cluster.nvme_nodes)),)
    return tuple(WorkerPool(name, release if i == 0 else f"{release}-{name}", layouts[name], tuple(nodes))
                 for i, (name, nodes) in enumerate(profiles.items()))


def tier_layout(cluster: ClusterModel, settings: AlluxioSettings, release: str = "alluxio") -> TierLayout:
    """The main release's tier layout (its pool's: every NVMe node's when they share one)."""
    return worker_pools(cluster, settings, release)[0].layout


# Master sizing. Alluxio 2.9 keeps its inodes in RocksDB on disk and caches the hot ones on the
# heap (alluxio.master.metastore.inode.cache.max.size, default 10 million):
#   inode_cache = min(expected_files, INODE_CACHE_MAX)
#   heap_gib    = ceil(MASTER_HEAP_BASE_GIB + inode_cache * HEAP_BYTES_PER_CACHED_INODE / 2^30)
#   limit_gib   = heap_gib + MASTER_DIRECT_GIB + MASTER_NATIVE_GIB
# -Xms = -Xmx = heap, so the JVM never grows into the limit; the request equals the limit.
INODE_CACHE_MAX = 10_000_000
MASTER_HEAP_BASE_GIB = 4  # block metadata, journal, RPC and job bookkeeping besides the inode cache
HEAP_BYTES_PER_CACHED_INODE = 2 * 1024  # an inode, its edges and locks in the cache
MASTER_DIRECT_GIB = 4  # gRPC/Netty buffers: metadata RPCs and Raft journal replication
MASTER_NATIVE_GIB = 4  # RocksDB block cache and memtables, metaspace, thread stacks
MASTER_MAX_NODE_SHARE = 0.5  # of a control-plane node's RAM (etcd and the API server run beside)


@dataclass(frozen=True)
class MasterSize:
    inode_cache: int
    heap_gib: int
    direct_gib: int
    limit_gib: int

    @property
    def jvm_options(self) -> list[str]:
        return [f"-Xms{self.heap_gib}g", f"-Xmx{self.heap_gib}g", f"-XX:MaxDirectMemorySize={self.direct_gib}g"]


def master_size(expected_files: int) -> MasterSize:
    cache = min(expected_files, INODE_CACHE_MAX)
    heap = math.ceil(MASTER_HEAP_BASE_GIB + cache * HEAP_BYTES_PER_CACHED_INODE / GIB)
    return MasterSize(cache, heap, MASTER_DIRECT_GIB, heap + MASTER_DIRECT_GIB + MASTER_NATIVE_GIB)


def bucket_policies(settings: AlluxioSettings) -> dict[str, str]:
    """Each listed bucket key's write type: its own (write_policies) or the default."""
    return {key: settings.write_policies.get(key, settings.write_policy) for key in settings.buckets}


def write_policy_problems(loaded, settings: AlluxioSettings, at: tuple) -> Iterator:
    """write_policies names listed buckets only; a durable bucket (cluster.s3.durable) never
    writes asynchronously: the error points at the policy that makes it so."""
    s3 = loaded.inventory.cluster.s3
    for key in settings.write_policies:
        if key not in settings.buckets:
            yield loaded.problem(at + ("write_policies", key), f"'{key}' is not one of components.alluxio.buckets "
                                 f"(have: {', '.join(settings.buckets)})")
    for key, policy in settings.write_policies.items():
        # A read-only mount takes no writes at all: an asynchronous policy there promises a write
        # path that does not exist (forge.components.alluxio.mounts.READ_ONLY_KEYS).
        if key in READ_ONLY_KEYS and policy != SYNCHRONOUS:
            yield loaded.problem(at + ("write_policies", key), f"bucket '{key}' ({s3.buckets.get(key, '?')}) is mounted read-only "
                                 f"(the training data): {policy} writes nothing there; give re-creatable outputs a writable "
                                 f"bucket of their own in cluster.s3.buckets and components.alluxio.buckets, and set its write policy")
    for key, policy in bucket_policies(settings).items():
        if key in s3.durable and policy != SYNCHRONOUS:
            where = at + (("write_policies", key) if key in settings.write_policies else ("write_policy",))
            yield loaded.problem(where, f"bucket '{key}' ({s3.buckets.get(key, '?')}) is durable (cluster.s3.durable): "
                                 f"{policy} returns before the write is in S3 and a worker restart loses it; "
                                 f"set components.alluxio.write_policies.{key}: {SYNCHRONOUS} "
                                 f"(a durable bucket allows only {SYNCHRONOUS})")


def proxy_write_type(settings: AlluxioSettings) -> str:
    """The one write type of the S3 proxy. Alluxio 2.9's proxy passes `alluxio.proxy.s3.writetype`
    explicitly on every create (S3RestUtils.getS3WriteType), so no per-path setting reaches it: one
    synchronous bucket makes the proxy synchronous for all (a slower write, never a lost one)."""
    return SYNCHRONOUS if SYNCHRONOUS in bucket_policies(settings).values() else "ASYNC_THROUGH"


def write_properties(settings: AlluxioSettings) -> dict[str, str]:
    """The site properties of the write policies: the proxy's (and the default for clients of
    paths no bucket mount covers) is proxy_write_type; a second cached copy while any bucket
    writes asynchronously. The per-bucket write types of native clients: path configuration set
    by the mount Job (mount_job)."""
    asynchronous = "ASYNC_THROUGH" in bucket_policies(settings).values()
    return {**(WRITE_POLICY_PROPERTIES["ASYNC_THROUGH"] if asynchronous else {}),
            **WRITE_POLICY_PROPERTIES[proxy_write_type(settings)]}


@dataclass(frozen=True)
class AlluxioFacts:
    layout: TierLayout  # the main release's workers (pools[0])
    properties: dict[str, str]  # Alluxio's site properties, as values.properties holds them
    buckets: tuple[str, ...]  # S3 bucket names mounted at /<name>, in the inventory's order
    pools: tuple[WorkerPool, ...] = ()  # worker pools; more than one when NVMe profiles differ
    master: MasterSize = master_size(INODE_CACHE_MAX)  # the masters' heap and limits (derive_facts sets it)
    write_types: tuple[tuple[str, str], ...] = ()  # (S3 bucket name, its write type), in buckets' order

    @property
    def extra_pools(self) -> tuple[WorkerPool, ...]:
        """The pools served by worker-only releases of their own."""
        return self.pools[1:]


def backup_properties(backup: JournalBackup | None, bucket_name: str | None) -> dict[str, str]:
    """The site properties of the daily journal backup: the root under-store is the backup bucket
    (Alluxio 2.9 writes every backup, scheduled or `fsadmin backup`, into the root UFS: its
    AbstractBackupRole.takeBackup), and the schedule. None: the root stays an empty local folder."""
    if backup is None:
        return {"alluxio.master.mount.table.root.ufs": ROOT_UFS}
    return {"alluxio.master.mount.table.root.ufs": f"s3://{bucket_name}/",
            "alluxio.master.daily.backup.enabled": "true",
            "alluxio.master.daily.backup.time": backup.time,
            "alluxio.master.daily.backup.files.retained": str(backup.retained),
            "alluxio.master.backup.directory": backup.directory,
            **({"alluxio.master.journal.init.from.backup": f"s3://{bucket_name}{backup.directory}/{backup.restore_from}"}
               if backup.restore_from else {})}


def backup_problems(loaded, settings: AlluxioSettings, at: tuple) -> Iterator:
    """The backup bucket is one of the cluster's and not one Alluxio mounts: Alluxio refuses a
    mount whose S3 path contains or lies in another mount's, the root's included."""
    backup = settings.journal.backup
    if backup is None:
        return
    buckets = loaded.inventory.cluster.s3.buckets
    where = at + ("journal", "backup", "bucket")
    if backup.bucket not in buckets:
        yield loaded.problem(where, f"'{backup.bucket}' is not a bucket of cluster.s3.buckets (have: {', '.join(sorted(buckets))})")
    elif backup.bucket in settings.buckets:
        free = sorted(set(buckets) - set(settings.buckets)) or ["none"]
        yield loaded.problem(where, f"bucket '{backup.bucket}' is mounted by Alluxio (components.alluxio.buckets): the backups "
                             f"need a bucket of their own, the root under-store, which no mount may overlap; "
                             f"add one to cluster.s3.buckets (not mounted now: {', '.join(free)})")


def derive_facts(cluster: ClusterModel, settings: AlluxioSettings, release: str) -> AlluxioFacts:
    s3 = cluster.settings.s3
    backup = settings.journal.backup
    properties = {
        **backup_properties(backup, s3.buckets.get(backup.bucket) if backup else None),
        "alluxio.master.mount.table.root.readonly": "true",
        "alluxio.underfs.s3.endpoint": s3.endpoint,
        "alluxio.underfs.s3.endpoint.region": s3.region,
        "alluxio.user.file.readtype.default": settings.read_policy,
        "alluxio.user.file.metadata.sync.interval": settings.metadata_sync_interval,
        # S3 clients authenticate to the open-source proxy by access-key name only (no
        # signature check), so Alluxio's POSIX permissions would guard nothing real, yet
        # they would refuse writes to S3 mounts (mode 0700, owned by the master's user).
        # Access to the data is decided by the S3 credentials of the masters and workers.
        "alluxio.security.authorization.permission.enabled": "false",
        **write_properties(settings),
    }
    master = master_size(settings.expected_files)
    properties["alluxio.master.metastore.inode.cache.max.size"] = str(master.inode_cache)
    pools = worker_pools(cluster, settings, release)
    write_types = tuple((s3.buckets[key], policy) for key, policy in bucket_policies(settings).items())
    return AlluxioFacts(pools[0].layout, properties, tuple(s3.buckets[key] for key in settings.buckets), pools, master,
                        write_types)


def tier_levels(layout: TierLayout) -> list[dict[str, Any]]:
    ssd = layout.ssd
    return [
        # MEM quota in bytes: it is both the emptyDir's sizeLimit and Alluxio's quota.
        {"level": 0, "alias": "MEM", "mediumtype": "MEM", "path": "/dev/shm", "type": "emptyDir",
         "quota": str(layout.memory_bytes), "high": 0.95, "low": 0.7},
        # One SSD tier over all NVMe mounts: comma-separated, one hostPath volume per path.
        {"level": 1, "alias": "SSD", "mediumtype": ",".join("SSD" for _ in ssd), "type": "hostPath",
         "path": ",".join(d.path for d in ssd), "quota": ",".join(f"{d.quota_gib}GB" for d in ssd),
         "high": 0.95, "low": 0.7},
    ]


def tier_options(layout: TierLayout) -> list[str]:
    """The Alluxio worker options the chart writes for tier_levels(layout) (its ConfigMap's
    ALLUXIO_WORKER_JAVA_OPTS): what the workers will actually use."""
    out = [f"-Dalluxio.worker.tieredstore.levels={len(tier_levels(layout))}"]
    for level in tier_levels(layout):
        prefix = f"-Dalluxio.worker.tieredstore.level{level['level']}"
        out += [f"{prefix}.alias={level['alias']}", f"{prefix}.dirs.mediumtype={level['mediumtype']}",
                f"{prefix}.dirs.path={level['path']}", f"{prefix}.dirs.quota={level['quota']}",
                f"{prefix}.watermark.high.ratio={level['high']}", f"{prefix}.watermark.low.ratio={level['low']}"]
    return out
