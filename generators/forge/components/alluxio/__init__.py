"""Alluxio (chart 0.6.54, Alluxio 2.9.6): an NVMe read/write cache in front of the cluster's S3
buckets, with an S3-compatible endpoint so code keeps its s3:// URLs and only changes endpoint.

Layout, all from the inventory:
- Namespace: the root mount is a read-only local directory; each bucket listed in
  `components.alluxio.buckets` is mounted at `/<bucket name>` by a PostSync Job, so through the
  S3 proxy bucket `exa-ml-datasets` is Alluxio path `/exa-ml-datasets` is s3://exa-ml-datasets/.
  (Alluxio 2.x reads only the root mount from its configuration; nested mounts need the CLI.)
- Workers: a DaemonSet on every node whose profile has NVMe and whose drives are all mounted
  (label forge.exa.ai/nvme, set by NFD from a probe's local feature: nvme_probe.py), two tiers:
  MEM (/dev/shm) = min(memory_tier.fraction x node RAM, memory_tier.max_gib), and SSD = exactly the
  profile's NVMe mount paths, each with quota floor(size_gb x 10^9 x (1 - ssd_reserve) / 2^30) GiB
  (vendor decimal GB in, Alluxio's binary "GB" out; the reserve stays free for the filesystem and
  flash wear levelling). Where NVMe profiles differ, each further profile's workers are a
  worker-only release of the chart with that profile's tiers (pools.py).
- Masters: `masters` (odd, >= 3) with the embedded (Raft) journal on the control-plane nodes, one
  per node (a required pod anti-affinity added at admission, placement.py) and so one per rack (the
  check below rejects control-plane nodes sharing a rack). Why the control plane: GPU nodes are
  drained and rebooted for driver and MIG changes and GPU jobs may pre-empt pods there, each of
  which would cost a Raft election; the control-plane nodes are stable, already one per rack, and
  the masters' few GB of heap fit beside the API server.
- Write policy, per bucket (write_policy, write_policies): CACHE_THROUGH (write to the cache and S3
  before returning) or ASYNC_THROUGH (return once cached, upload in the background); a bucket of
  cluster.s3.durable must be CACHE_THROUGH. Each bucket's is path configuration set by the mount
  Job; the S3 proxy's is proxy-wide in 2.9 (layout.proxy_write_type): synchronous as soon as one
  bucket is. Read policy -> readtype.
- Credentials: the cluster's S3 Secret, mounted into masters and workers (which talk to S3) at
  /secrets/s3/ and read by the AWS SDK as a shared-credentials file (its key `credentials`). The
  chart mounts it into the job master and job workers too, but gives them no environment of
  their own: they get AWS_CREDENTIAL_PROFILES_FILE through jobMaster.env / jobWorker.env, since
  ASYNC_THROUGH uploads run as persist jobs on the job workers.
- Services we add: `alluxio-s3` (the S3 endpoint), and headless metrics Services for scraping.

Chart 0.6.54 cannot set a priorityClassName, affinity or topology spread: hence the admission
policy that spreads the masters (placement.py), and masters, workers and proxies get their system class from forge's
MutatingAdmissionPolicy (forge.components.infra_priority; `Alluxio.priority_exception`).
Nor an init container for the workers: the admission policy of tier_check.py gives each worker pod
one that refuses to start on a tier path that is not a mount point.
"""
from __future__ import annotations

from typing import Any, Iterator

from forge.components.alluxio import layout, nvme_probe, placement, pools, tier_check
from forge.components.alluxio.mounts import (IMAGE, MOUNT_JOB_UID, NAMESPACE, READ_ONLY_KEYS, RELEASE,  # noqa: F401 (re-exported)
                                             mount_job, read_only_buckets)
from forge.components.alluxio.layout import (GIB, READ_POLICIES, ROOT_UFS, WRITE_POLICY_PROPERTIES, AlluxioFacts,  # noqa: F401 (re-exported)
                                             AlluxioSettings, Journal, MemoryTier, SsdDir, TierLayout, memory_tier_gib,
                                             ssd_quota_gib, tier_layout, tier_levels, tier_options)
from forge.components import local_storage, network
from forge.components.base import RBAC_NAMESPACED, WORKLOAD_KINDS, WAVE_STORAGE, Component, Contains, Expected, Scrape, storage_class_problem
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL
from forge.model.cluster import NVME_LABEL, ClusterModel
from forge.facts import versions
from forge.model.secrets import SecretUse

HELM_RELEASE_MAX = 53  # Helm's limit on release names
S3_ROLE = "s3-alluxio"  # its own S3 credential in the secret store (docs/security.md)
SECRET_MOUNT = "s3"  # the chart mounts secrets.<component>.<name>: <dir> at /secrets/<dir>
CREDENTIALS_FILE = f"/secrets/{SECRET_MOUNT}/credentials"
PROXY_PORT = 39999  # the chart's proxy.ports.web
S3_SERVICE = "alluxio-s3"
S3_PATH = "/api/v1/s3"
METRICS_PATH = "/metrics/prometheus/"
MASTER_METRICS_PORTS = {"web": 19999, "job-web": 20002}  # chart defaults master/jobMaster.ports.web
WORKER_METRICS_PORTS = {"web": 30000, "job-web": 30003}  # chart defaults worker/jobWorker.ports.web
JOURNAL_VOLUME = "alluxio-journal"  # its local-path class: forge-local-alluxio-journal
APP_LABEL = "alluxio"  # the chart's `app` pod label: its name
# Where Prometheus scrapes Alluxio (the prometheus component's PodMonitors): the pods carry no
# named port, so by number; selected by app and role alone, whatever the release.
SCRAPES = tuple(Scrape(f"forge-{role}", NAMESPACE, {"matchLabels": {"app": APP_LABEL, "role": role}}, ports["web"], METRICS_PATH)
                for role, ports in (("alluxio-master", MASTER_METRICS_PORTS), ("alluxio-worker", WORKER_METRICS_PORTS)))
# Worker JVM: fixed heap and direct memory, so the container limit = memory tier + this.
WORKER_JVM_OPTIONS = ["-Xmx8g", "-XX:MaxDirectMemorySize=8g"]
WORKER_JVM_GIB = 20  # 8 heap + 8 direct + 4 metaspace, threads, GC

class Alluxio(Component):
    name = "alluxio"
    namespace = NAMESPACE
    sync_wave = WAVE_STORAGE
    namespaced_kinds = (*WORKLOAD_KINDS, *RBAC_NAMESPACED, ("apps", "StatefulSet"), ("apps", "DaemonSet"))
    chart = "alluxio"
    release_name = RELEASE
    cluster_kinds = placement.KINDS  # one master per node without the host network
    # `secrets` is documented only in comments (values.yaml of 0.6.54); `properties` is Alluxio's
    # free-form site configuration (the chart's default shows one example key); jobMaster.env and
    # jobWorker.env are read by the templates (master/statefulset.yaml, worker/daemonset.yaml)
    # but appear nowhere in values.yaml.
    declared_values = frozenset({"secrets", "properties", "jobMaster.env", "jobWorker.env"})
    priority_exception = (
        "the pinned alluxio chart has no priorityClassName value for any pod, and Argo CD renders the chart "
        "itself (no kustomize patch reaches chart objects without --enable-helm in argocd-cm, which this "
        "repo does not manage): forge's MutatingAdmissionPolicy (forge.components.infra_priority) gives masters, "
        "workers and proxies a system class when they are created")
    # Set on purpose although the chart's defaults match: the image the mount Job uses too, and
    # the journal on a PVC (what journal.storageClass and journal.size mean).
    inventory_values = frozenset({"image", "imageTag", "journal.volumeType"})
    Settings = AlluxioSettings
    cluster_kinds = (("nfd.k8s-sigs.io", "NodeFeatureRule"),)  # the NVMe label from the mounts (nvme_probe)

    def enabled(self, cluster: ClusterModel) -> bool:
        return self.name in cluster.component_settings

    def node_features(self, cluster: ClusterModel, node) -> dict[str, dict[str, str]]:
        return nvme_probe.node_features(node)  # a healthy NVMe node: every drive mounted

    def secrets(self, cluster: ClusterModel) -> list[SecretUse]:
        return [SecretUse("s3", cluster.settings.s3.credentials_secret, (self.namespace,), role=S3_ROLE)]

    # ---- inventory rules --------------------------------------------------------------------

    def check(self, loaded, settings: AlluxioSettings, given) -> Iterator:
        inv = loaded.inventory
        at = ("components", self.name)
        seen: dict[str, int] = {}
        for i, key in enumerate(settings.buckets):
            if key not in inv.cluster.s3.buckets:
                known = ", ".join(sorted(inv.cluster.s3.buckets)) or "none"
                yield loaded.problem(at + ("buckets", i), f"'{key}' is not a bucket of cluster.s3.buckets (have: {known})")
            elif key in seen:
                yield loaded.problem(at + ("buckets", i), f"bucket '{key}' listed twice (also buckets[{seen[key]}])")
            seen.setdefault(key, i)
        yield from layout.write_policy_problems(loaded, settings, at)
        yield from layout.backup_problems(loaded, settings, at)

        nvme_profiles = [(name, p) for name, p in inv.profiles.items()
                         if p.nvme and any(n.profile == name for n in inv.nodes)]
        if not nvme_profiles:
            yield loaded.problem(at, "no node's profile has NVMe devices: Alluxio workers cache on them")
        for name, profile in nvme_profiles:
            mounts = [d.mount for d in profile.nvme]
            for j, mount in enumerate(mounts):
                outer = next((m for m in mounts if m != mount and mount.startswith(m.rstrip("/") + "/")), None)
                if outer:
                    yield loaded.problem(("profiles", name, "nvme", j, "mount"),
                                         f"NVMe mount '{mount}' lies inside mount '{outer}': the cache would count that space twice")
            # A profile may get a worker pool release of its own (pools.py): Helm caps release names.
            if len(nvme_profiles) > 1 and len(f"{RELEASE}-{name}") > HELM_RELEASE_MAX:
                yield loaded.problem(("profiles", name), f"profile name '{name}' is too long for its Alluxio worker release "
                                     f"'{RELEASE}-{name}' (Helm allows {HELM_RELEASE_MAX} characters): shorten it")
        journal = settings.journal
        yield from local_storage.conflict(loaded, at + ("journal", "data_path"), journal.storage_class, journal.data_path,
                                          "journal.storage_class", JOURNAL_VOLUME)
        if not journal.data_path:
            yield from storage_class_problem(loaded, journal.storage_class, self.name, "the masters' embedded journal")
        control_plane = [(i, n) for i, n in enumerate(inv.nodes) if "control-plane" in n.roles]
        yield from self._master_fits(loaded, settings, control_plane)
        if settings.masters > len(control_plane):
            yield loaded.problem(at + ("masters",), f"{settings.masters} masters need as many control-plane nodes (one master each); the inventory has {len(control_plane)}")
        racks: dict[str, str] = {}
        for i, node in control_plane:
            if node.rack in racks:
                yield loaded.problem(("nodes", i, "rack"),
                                     f"control-plane nodes {racks[node.rack]} and {node.name} share rack '{node.rack}': "
                                     "Alluxio masters run one per control-plane node and must not share a rack")
            racks.setdefault(node.rack, node.name)

    def _master_fits(self, loaded, settings: AlluxioSettings, control_plane) -> Iterator:
        size = layout.master_size(settings.expected_files)
        profiles = loaded.inventory.profiles
        rams = [(profiles[n.profile].memory_gib, n.name) for _, n in control_plane if n.profile in profiles]
        if rams and size.limit_gib > min(rams)[0] * layout.MASTER_MAX_NODE_SHARE:
            ram, node = min(rams)
            yield loaded.problem(("components", self.name, "expected_files"),
                                 f"{settings.expected_files} files need {size.limit_gib} GiB per Alluxio master ({size.heap_gib} GiB heap), "
                                 f"more than {layout.MASTER_MAX_NODE_SHARE:.0%} of control-plane node {node}'s {ram} GiB")

    # ---- output -----------------------------------------------------------------------------

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        # The S3 proxy checks no credentials: only Flyte and its task pods (the project
        # namespaces Flyte owns) may reach it. Loki writes to S3 itself, not through the cache.
        # The masters run on the pod network too (placement.py): the namespace's policies hold them.
        return (network.Allow("s3-proxy", (PROXY_PORT,), from_components=("flyte",), to_pods=_selector("alluxio-proxy")),
                network.scrape([*MASTER_METRICS_PORTS.values(), *WORKER_METRICS_PORTS.values()]))

    def derive_facts(self, cluster: ClusterModel) -> AlluxioFacts:
        return layout.derive_facts(cluster, self.settings(cluster), RELEASE)

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        settings: AlluxioSettings = self.settings(cluster)
        facts: AlluxioFacts = self.facts(cluster)
        s3 = cluster.settings.s3
        aws_env = {"AWS_CREDENTIAL_PROFILES_FILE": CREDENTIALS_FILE}
        proxies_where = {"nodeSelector": {NVME_LABEL: "true"}, "tolerations": cluster.nvme_tolerations}
        return {
            "image": versions.image(IMAGE).repository,
            "imageTag": versions.image(IMAGE).tag,
            # The NVMe mount points are root-owned host directories (hostPath volumes get no
            # fsGroup): the cache must run as root to write to them.
            "user": 0,
            "group": 0,
            "fsGroup": 0,
            "properties": dict(facts.properties),
            "secrets": {"master": {s3.credentials_secret: SECRET_MOUNT}, "worker": {s3.credentials_secret: SECRET_MOUNT}},
            "master": {
                "count": settings.masters,
                # On the pod network, inside the namespace's NetworkPolicies: one master per node
                # by the admission policy of forge.components.alluxio.placement.
                "hostNetwork": False,
                "nodeSelector": cluster.system_node_selector,
                "tolerations": cluster.system_tolerations,
                "env": aws_env,
                # Heap from the expected file count (layout.master_size), not the chart's 8 GB default
                # in an 8Gi limit, which leaves nothing for direct and native memory.
                "jvmOptions": facts.master.jvm_options,
                "resources": {"requests": {"cpu": "2", "memory": f"{facts.master.limit_gib}Gi"},
                              "limits": {"cpu": "8", "memory": f"{facts.master.limit_gib}Gi"}},
            },
            "jobMaster": {"env": aws_env},
            "journal": {
                "type": "EMBEDDED",
                "volumeType": "persistentVolumeClaim",
                "storageClass": journal_class(cluster, settings),
                "size": f"{settings.journal.size_gib}Gi",
            },
            "worker": _worker(cluster, facts.pools[0]),
            "jobWorker": {"env": aws_env},
            "tieredstore": {"levels": tier_levels(facts.layout)},
            # Clients reach workers over the network (the S3 proxy has no domain-socket mount).
            "shortCircuit": {"enabled": False},
            "proxy": {"enabled": True, **proxies_where},
            "metrics": {"enabled": True, "PrometheusMetricsServlet": {"enabled": True}},
        }

    def extra_releases(self, cluster: ClusterModel) -> dict[str, dict[str, Any]]:
        """Worker-only releases, one per further pool, when NVMe profiles differ (pools.py)."""
        facts: AlluxioFacts = self.facts(cluster)
        if not facts.extra_pools:
            return {}
        main, masters = self.values(cluster), self.settings(cluster).masters
        return {pool.release: pools.pool_values(main, pool, _worker(cluster, pool), tier_levels(pool.layout), RELEASE, masters)
                for pool in facts.extra_pools}

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        """What the chart must have made of our values: tiers, masters and journal, the
        properties, placement, and the S3 credentials by Secret reference in every container
        that reaches S3."""
        settings: AlluxioSettings = self.settings(cluster)
        tiers = self.facts(cluster).layout
        secret = cluster.settings.s3.credentials_secret
        config = ("ConfigMap", f"{RELEASE}-config")
        master, worker, proxy = ("StatefulSet", f"{RELEASE}-master"), ("DaemonSet", f"{RELEASE}-worker"), ("DaemonSet", f"{RELEASE}-proxy")
        pod = ("spec", "template", "spec")
        image = versions.image(IMAGE).ref
        aws_env = {"name": "AWS_CREDENTIAL_PROFILES_FILE", "value": CREDENTIALS_FILE}
        secret_volume = {"name": f"secret-{secret}-volume", "secret": {"secretName": secret, "defaultMode": 256}}
        secret_mount = {"name": f"secret-{secret}-volume", "mountPath": f"/secrets/{SECRET_MOUNT}", "readOnly": True}
        out = [
            # Every property, and the embedded journal, on every Alluxio process's command line.
            Expected(*config, ("data", "ALLUXIO_JAVA_OPTS"), Contains(
                "-Dalluxio.master.journal.type=EMBEDDED",
                *(f"-D{k}={v}" for k, v in self.facts(cluster).properties.items()))),
            Expected(*config, ("data", "ALLUXIO_WORKER_JAVA_OPTS"), Contains(*tier_options(tiers), *WORKER_JVM_OPTIONS)),
            Expected(*master, "spec.replicas", settings.masters),
            Expected(*config, ("data", "ALLUXIO_MASTER_JAVA_OPTS"), Contains(*self.facts(cluster).master.jvm_options)),
            Expected(*master, (*pod, "containers", "name=alluxio-master", "resources", "limits", "memory"),
                     f"{self.facts(cluster).master.limit_gib}Gi"),
            Expected(*master, (*pod, "hostNetwork"), False),  # the chart renders it as given
            Expected(*master, (*pod, "nodeSelector"), cluster.system_node_selector),
            Expected(*master, (*pod, "tolerations"), cluster.system_tolerations),
            Expected(*master, ("spec", "volumeClaimTemplates", "metadata.name=alluxio-journal", "spec"),
                     {"storageClassName": journal_class(cluster, settings), "accessModes": ["ReadWriteOnce"],
                      "resources": {"requests": {"storage": f"{settings.journal.size_gib}Gi"}}}),
            Expected(*master, (*pod, "volumes"), Contains(secret_volume)),
            Expected(*worker, (*pod, "nodeSelector"), pools.worker_selector(self.facts(cluster).pools[0])),
            Expected(*worker, (*pod, "tolerations"), pools.worker_tolerations(cluster, self.facts(cluster).pools[0])),
            Expected(*worker, (*pod, "volumes"), Contains(
                secret_volume,
                {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": tiers.memory_bytes}},
                *({"name": f"ssd-{i}", "hostPath": {"path": d.path, "type": "DirectoryOrCreate"}} for i, d in enumerate(tiers.ssd)))),
            # The S3 proxy (our alluxio-s3 Service selects it) on the cache nodes.
            Expected(*proxy, (*pod, "nodeSelector"), {NVME_LABEL: "true"}),
            Expected(*proxy, (*pod, "tolerations"), cluster.nvme_tolerations),
            Expected(*proxy, (*pod, "containers", "name=alluxio-proxy", "ports"), [{"containerPort": PROXY_PORT, "name": "web"}]),
        ]
        for kind_name, containers in ((master, ("alluxio-master", "alluxio-job-master")),
                                      (worker, ("alluxio-worker", "alluxio-job-worker"))):
            for name in containers:
                at = (*pod, "containers", f"name={name}")
                out += [Expected(*kind_name, (*at, "image"), image),
                        Expected(*kind_name, (*at, "env"), Contains(aws_env)),
                        Expected(*kind_name, (*at, "volumeMounts"), Contains(secret_mount))]
        out.append(Expected(*proxy, (*pod, "containers", "name=alluxio-proxy", "image"), image))
        for pool in self.facts(cluster).extra_pools:  # worker-only releases: their tiers, nodes, masters
            pool_worker = ("DaemonSet", f"{pool.release}-worker")
            out += [Expected("ConfigMap", f"{pool.release}-config", ("data", "ALLUXIO_WORKER_JAVA_OPTS"), Contains(*tier_options(pool.layout))),
                    Expected("ConfigMap", f"{pool.release}-config", ("data", "ALLUXIO_JAVA_OPTS"), Contains(
                        *(f"-D{k}={v}" for k, v in pools.master_addresses(RELEASE, settings.masters).items()))),
                    Expected(*pool_worker, (*pod, "nodeSelector"), pools.worker_selector(pool)),
                    Expected(*pool_worker, (*pod, "tolerations"), pools.worker_tolerations(cluster, pool)),
                    Expected(*pool_worker, (*pod, "containers", "name=alluxio-worker", "image"), image)]
        return out

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        return [
            s3_service(),
            metrics_service("alluxio-master-metrics", "alluxio-master", MASTER_METRICS_PORTS),
            metrics_service("alluxio-worker-metrics", "alluxio-worker", WORKER_METRICS_PORTS),
            mount_job(cluster, list(self.facts(cluster).write_types), read_only_buckets(cluster)),
            *placement.objects(NAMESPACE, _selector("alluxio-master")),
            nvme_probe.label_rule(),
            *nvme_probe.probes(cluster, NAMESPACE, IMAGE),
            *local_storage.objects({JOURNAL_VOLUME: self.settings(cluster).journal.data_path}),
            # No worker starts on a tier path that is not a mount point (an init check at admission).
            *tier_check.objects(NAMESPACE, [(pool.release, {"app": APP_LABEL, "release": pool.release, "role": "alluxio-worker"},
                                             [d.path for d in pool.layout.ssd]) for pool in self.facts(cluster).pools]),
        ]


def journal_class(cluster: ClusterModel, settings: AlluxioSettings) -> str:
    return local_storage.chosen_class(cluster, settings.journal.storage_class, settings.journal.data_path, JOURNAL_VOLUME)


def _worker(cluster: ClusterModel, pool: layout.WorkerPool) -> dict[str, Any]:
    """The worker block of the release serving `pool`: where it runs and its memory."""
    worker_bytes = pool.layout.memory_bytes + WORKER_JVM_GIB * GIB
    return {
        "nodeSelector": pools.worker_selector(pool),
        "tolerations": pools.worker_tolerations(cluster, pool),
        "env": {"AWS_CREDENTIAL_PROFILES_FILE": CREDENTIALS_FILE},
        "jvmOptions": WORKER_JVM_OPTIONS,
        # Bytes: the chart also hands the request to Alluxio (ramdisk size), and Alluxio
        # reads "Gi" differently from Kubernetes; a plain number means the same to both.
        "resources": {"requests": {"cpu": "4", "memory": str(worker_bytes)},
                      "limits": {"memory": str(worker_bytes)}},
    }


def _selector(role: str) -> dict[str, str]:
    # The chart's pod labels: app is the chart name, release the Helm release.
    return {"app": APP_LABEL, "release": RELEASE, "role": role}


pod_labels = _selector  # what the box's flows label a role's pods with (forge.twin.peers)


def s3_endpoint(cluster_domain: str = "cluster.local") -> str:
    """The S3 endpoint other components use (Flyte's storage, task pods)."""
    return f"http://{S3_SERVICE}.alluxio.svc.{cluster_domain}:{PROXY_PORT}{S3_PATH}"


def s3_service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": S3_SERVICE, "namespace": NAMESPACE},
        "spec": {
            "selector": _selector("alluxio-proxy"),
            "ports": [{"name": "http", "port": PROXY_PORT, "targetPort": PROXY_PORT}],
            # A proxy runs on every cache node: prefer the caller's own node, fall back to others
            # (callers off the cache nodes, such as Flyte on the control plane, still get one).
            "trafficDistribution": "PreferSameNode",
        },
    }


def metrics_service(name: str, role: str, ports: dict[str, int]) -> dict[str, Any]:
    """Headless: Prometheus scrapes each pod (path METRICS_PATH), not a load-balanced address."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NAMESPACE, "annotations": {"forge.exa.ai/metrics-path": METRICS_PATH}},
        "spec": {
            "clusterIP": "None",
            "selector": _selector(role),
            "ports": [{"name": port_name, "port": port, "targetPort": port} for port_name, port in ports.items()],
        },
    }
