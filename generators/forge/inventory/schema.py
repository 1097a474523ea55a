"""The inventory's shape: strict pydantic models, unknown keys forbidden, types not coerced.

Only the shape lives here; rules that span fields (duplicate names, unknown profiles, MIG
layouts a GPU cannot hold) live in `checks.py`, and derived facts in `forge.model.cluster`.
"""
from __future__ import annotations

import functools
import importlib.util
import ipaddress
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from forge.facts import hardware
from forge.facts.hardware import GPU_MODELS, INSTANCE_TYPES, NIC_MODELS, SERVER_MODELS, unknown_model
from forge.inventory.formats import CURRENT
from forge.inventory.strings import CapacityType, FeatureGate, GitUrl, GroupVersion, HttpsUrl, HttpUrl, PlacementGroupName, Region, mount_path

_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _one_of(table: Any, what: str):
    def check(value: str) -> str:
        if value not in table:
            raise ValueError(unknown_model(what, value, table))
        return value

    return AfterValidator(check)


DNS_LABEL_WORDS = ("names are DNS labels: lower-case letters, digits and '-', at most 63 characters, "
                   "starting and ending with a letter or digit")
# The other patterns, said in words: the loader shows these instead of a regular expression.
PATTERN_WORDS = {
    r"^[A-Z][A-Za-z0-9]{1,80}$": "a feature gate name as kube-apiserver takes it, such as MutatingAdmissionPolicy",
    r"^[a-z0-9.-]+/v[0-9]+((alpha|beta)[0-9]+)?$": "an API group/version such as admissionregistration.k8s.io/v1beta1",
    r"^/dev/nvme[0-9]+n[0-9]+$": "an NVMe namespace device such as /dev/nvme0n1",
    r"^/[A-Za-z0-9_./-]+$": "an absolute path of letters, digits and _ . / - (no spaces)",
    r"^(https://|ssh://|git@)\S+$": "a git URL starting with https://, ssh:// or git@, without spaces",
    r"^https?://\S+$": "a URL starting with http:// or https://, without spaces",
    r"^[A-Za-z0-9._/-]+$": "a git revision: a branch, tag or commit (letters, digits and . _ / -)",
    r"^[a-zA-Z0-9_.-]{1,15}$": "a Linux interface name: 1-15 letters, digits, '_', '.' or '-' (such as ens1f0)",
    r"^\S+( \S+){4}$": "a cron schedule of five fields: minute hour day-of-month month day-of-week (such as '0 9 * * 1-4')",
    r"^[1-9][0-9]*[mh]$": "a duration in minutes or hours, such as 90m or 6h",
}


def _dns_label(value: str) -> str:
    if len(value) <= 63 and re.fullmatch(_DNS_LABEL, value):
        return value
    message = f"'{value}' is not a valid name: {DNS_LABEL_WORDS}"
    if any(m.mig_profile(value) for m in GPU_MODELS.values()):
        message += f"; '{value}' is a MIG profile: name a layout defined under cluster.mig_layouts, which lists profiles"
    elif suggestion := re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", value.lower())).strip("-")[:63].strip("-"):
        message += f"; did you mean '{suggestion}'?"
    raise ValueError(message)


def _at_most(limit: int, why: str):
    def check(value: int) -> int:
        if value > limit:
            raise ValueError(f"{value} is more than {why} (at most {limit:,})")
        return value

    return AfterValidator(check)


@functools.cache
def kubernetes_schema_dir() -> Path:
    """The schema folder kubernetes-validate ships, found without importing the package: its
    import pulls in jsonschema, 0.3 s in every process that validates."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("kubernetes_validate is not installed: run `make setup`")
    return Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"


@functools.cache
def kubernetes_versions() -> tuple[str, ...]:
    """The Kubernetes minors ("1.34") whose strict schemas the pinned kubernetes-validate ships:
    the folders forge.validate.kube reads (this stage may not import it), so the ones `forge
    validate` can check."""
    root = kubernetes_schema_dir()
    found = [m.group(1) for p in root.iterdir() if (m := re.match(r"^v(\d+\.\d+)\.0-local-strict$", p.name))]
    return tuple(sorted(found, key=lambda v: tuple(int(x) for x in v.split("."))))


def _kubernetes_version(value: str) -> str:
    known = kubernetes_versions()
    if value not in known:
        form = "" if re.fullmatch(r"1\.[0-9]{2}", value) else " (major.minor, quoted, such as \"1.34\")"
        raise ValueError(f"Kubernetes {value!r}{form} has no schemas to validate against; "
                         f"expected one of: {', '.join(known)}")
    return value


def _label_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if not re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", name or ""):
        raise ValueError(f"'{key}' is not a valid label key")
    if prefix and not re.fullmatch(_DNS_SUBDOMAIN, prefix):
        raise ValueError(f"'{key}' has an invalid prefix '{prefix}'")
    if prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io") or prefix == "k8s.io":
        # node-feature-discovery refuses these namespaces, and the kubelet owns them.
        raise ValueError(f"'{key}' uses the reserved prefix '{prefix}'; use your own domain")
    return key


def _label_value(value: str) -> str:
    if value and not re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", value):
        raise ValueError(f"'{value}' is not a valid label value (63 characters of [A-Za-z0-9-_.])")
    return value


def _cidr(value: str) -> str:
    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError as exc:
        try:
            fixed = ipaddress.ip_network(value, strict=False)
        except ValueError:
            raise ValueError(f"'{value}' is not a CIDR ({exc})") from None
        raise ValueError(f"'{value}' has host bits set; did you mean {fixed}?") from None
    return value


Name = Annotated[str, AfterValidator(_dns_label)]
LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
Cidr = Annotated[str, AfterValidator(_cidr)]
GpuModelKey = Annotated[str, _one_of(GPU_MODELS, "GPU model")]
NicModelKey = Annotated[str, _one_of(NIC_MODELS, "NIC model")]
ServerModelKey = Annotated[str, _one_of(SERVER_MODELS, "server model")]
InstanceTypeKey = Annotated[str, _one_of(INSTANCE_TYPES, "instance type")]
PositiveInt = Annotated[int, Field(gt=0)]
K8sVersion = Annotated[str, AfterValidator(_kubernetes_version)]
S3Bucket = Annotated[str, Field(min_length=3, max_length=63)]
# A Linux network interface name: at most 15 characters (IFNAMSIZ - 1).
InterfaceName = Annotated[str, Field(pattern=r"^[a-zA-Z0-9_.-]{1,15}$")]


class ArgoDestination(Strict):
    server: HttpsUrl = "https://kubernetes.default.svc"  # one exact API server: no glob (AppProject)


def _project(value: str) -> str:
    if value == "default":
        raise ValueError("'default' is Argo CD's own project, which every Application may use and which allows "
                         "everything: name the cluster's own project (such as the cluster's name)")
    return value


class ArgoSettings(Strict):
    namespace: Name = "argocd"
    project: Annotated[Name, AfterValidator(_project)]
    destination: ArgoDestination = ArgoDestination()


class GitSettings(Strict):
    repo_url: GitUrl  # exact: Argo CD reads an AppProject's sourceRepos as globs
    revision: Annotated[str, Field(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9._/-]+$")]


class S3Settings(Strict):
    endpoint: HttpUrl
    region: Region
    buckets: dict[Name, S3Bucket]
    credentials_secret: Name  # an existing Secret; forge never holds credentials
    # Keys of `buckets` whose writes must be in S3 when they return (checkpoints, Flyte's
    # metadata): a cache in front of them may only write synchronously (forge.components.alluxio).
    durable: list[Name] = []


class ExpectedCapacity(Strict):
    """What the node list must add up to: a reviewer's cross-check on a large edit."""

    gpu_nodes: int | None = None
    gpus: int | None = None


class MigLayoutGroup(Strict):
    gpus: list[Annotated[int, Field(ge=0)]] | Literal["all"]
    profiles: dict[str, PositiveInt]


class Rail(Strict):
    """One rail of the compute fabric: a NIC port on every fabric node, and the pod subnet on it."""

    name: Name  # the secondary network pods attach (NetworkAttachmentDefinition and IP pool name)
    interface: InterfaceName  # the compute-role NIC port this rail runs over, in every fabric node's profile
    cidr: Cidr  # pod addresses on this rail; each node takes a block of `addresses_per_node`


class ComputeNetwork(Strict):
    """Addressing of the compute (east-west RDMA) fabric. Applies to the nodes whose profile has
    compute-role NICs that can do RDMA; with none, it is unused and nothing is generated from it."""

    mtu: Annotated[int, Field(ge=1280, le=9216)]  # as configured on the rail ports of the hosts
    addresses_per_node: PositiveInt  # pod addresses per node and rail (nv-ipam perNodeBlockSize)
    rails: Annotated[list[Rail], Field(min_length=1)]


class NetworkSettings(Strict):
    compute: ComputeNetwork | None = None


# A cron schedule of five fields (minute hour day-of-month month day-of-week), as Argo CD's
# sync windows read it; a duration such as 90m or 6h.
CronSchedule = Annotated[str, Field(pattern=r"^\S+( \S+){4}$")]
WindowDuration = Annotated[str, Field(pattern=r"^[1-9][0-9]*[mh]$")]


class SyncWindow(Strict):
    """When the named components (all, when none are named) may sync (allow) or may not (deny):
    an Argo CD AppProject sync window over those components' Applications."""

    kind: Literal["allow", "deny"]
    schedule: CronSchedule
    duration: WindowDuration
    components: list[Name] = []
    time_zone: Annotated[str, Field(min_length=1)] = "UTC"


class RolloutSettings(Strict):
    """Where this cluster sits in the rollout (docs/rollout.md): its ring (one of clusters/rings.yaml)
    and the APIs `forge promote` reads its gates from."""

    ring: Name  # its Applications track the ring's git ref, forge/ring/<ring>
    argocd_url: HttpUrl  # the Argo CD API server that runs this cluster's Applications
    prometheus_url: HttpUrl  # the Prometheus HTTP API that scrapes this cluster
    sync_windows: list[SyncWindow] = []
    # The emergency brake: no Application of the cluster syncs, automatically (self-heal) or by
    # hand, until it is released (a deny window with manualSync false, in the AppProject).
    brake: bool = False
    # Run this cluster's Applications from the central Argo CD (`forge appsets`: one ApplicationSet
    # per component over the cluster generator) instead of its own root Application.
    central: bool = False


class CloudSettings(Strict):
    """Where a cloud cluster runs: its nodes are node pools (Karpenter), not a node list."""

    provider: Literal["aws"]
    region: Annotated[str, Field(pattern=r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$")]
    # The AWS account the cluster runs in (a 12-digit ID): the IAM roles Karpenter and its nodes
    # use are named from it (forge.components.karpenter); never a credential.
    account: Annotated[str, Field(pattern=r"^[0-9]{12}$")]


class ApiServerSettings(Strict):
    """What the API server serves beyond its Kubernetes version's defaults (forge.facts.kube_apis): the
    flags it is built with (docs/bootstrap.md). On premises only: a managed control plane
    (cluster.cloud) serves the provider's defaults."""

    feature_gates: list[FeatureGate] = []  # turned on (--feature-gates NAME=true)
    runtime_config: list[GroupVersion] = []  # turned on (--runtime-config GROUP/VERSION=true)


class ClusterSettings(Strict):
    name: Name
    kubernetes_version: K8sVersion
    argocd: ArgoSettings
    git: GitSettings
    s3: S3Settings
    expected: ExpectedCapacity = ExpectedCapacity()
    # Named MIG layouts; a GPU a layout does not mention keeps MIG off.
    mig_layouts: dict[Name, list[MigLayoutGroup]] = {}
    network: NetworkSettings = NetworkSettings()
    # The ingress controller's namespace: the NetworkPolicies let it reach the services people
    # use from outside (Flyte), and nothing else from there.
    ingress_namespace: Name = "ingress-nginx"
    # The StorageClass of every volume forge's components claim (Prometheus, Alertmanager, Loki,
    # Alluxio's journal), unless the component's own `storage_class` overrides it. Required as soon
    # as one such component runs: the cluster's default class is never relied on.
    storage_class: Name | None = None
    # The rollout ring and gate APIs; without it the Applications track git.revision directly.
    rollout: RolloutSettings | None = None
    # Set for a cloud cluster (then `node_pools` replaces `nodes`); absent on premises.
    cloud: CloudSettings | None = None
    # The API server's feature gates and runtime-config beyond the defaults (on premises only).
    api_server: ApiServerSettings = ApiServerSettings()


class GpuSpec(Strict):
    model: GpuModelKey
    count: Annotated[PositiveInt, _at_most(hardware.MAX_GPUS_PER_SERVER, "the GPUs any server takes")]
    nvlink: Annotated[int, Field(ge=0, le=5)] = 0  # NVLink generation; 0 = none


NicRole = Literal["compute", "storage", "frontend", "management"]
LinkType = Literal["ethernet", "infiniband"]
# An RDMA device name as the kernel gives it (mlx5_0): what NCCL_IB_HCA and node-exporter's
# infiniband collector (label `device`) name a port's HCA by.
HcaName = Annotated[str, Field(pattern=r"^[a-zA-Z0-9_]{1,64}$")]


class NicSpec(Strict):
    model: NicModelKey
    count: Annotated[PositiveInt, _at_most(hardware.MAX_NICS_PER_SERVER, "the NIC slots of a server")]
    ports: Annotated[PositiveInt, _at_most(hardware.MAX_PORTS_PER_NIC, "the ports of a NIC")] = 1  # ports per card that are cabled
    port_gbps: Annotated[PositiveInt, _at_most(hardware.MAX_PORT_GBPS, "the speed of any network port, in Gb/s")]
    role: NicRole
    interfaces: list[InterfaceName]
    # The link layer the ports run (forge.inventory.links checks the model can): infiniband ports
    # get IPoIB interfaces (ib*, ibp*) and IPoIB secondary networks instead of macvlan.
    link_type: LinkType = "ethernet"
    # RDMA device of each interface, in the same order (`rdma link` / `ibdev2netdev` on a node);
    # needed for InfiniBand ports, which NCCL and the port alerts address by HCA, not by interface.
    hcas: list[HcaName] = []
    # InfiniBand SR-IOV virtual functions per port: not generated yet (refused, see links.py).
    sriov_vfs: PositiveInt | None = None


class NvmeSpec(Strict):
    device: Annotated[str, Field(pattern=r"^/dev/nvme[0-9]+n[0-9]+$")]
    size_gb: Annotated[PositiveInt, _at_most(hardware.MAX_NVME_SIZE_GB, "the largest NVMe drive holds")]  # vendor (decimal) gigabytes
    mount: Annotated[str, Field(pattern=r"^/[A-Za-z0-9_./-]+$"), AfterValidator(mount_path)]


class Profile(Strict):
    server: ServerModelKey
    cpu_threads: Annotated[PositiveInt, _at_most(hardware.MAX_SERVER_CPU_THREADS, "the CPU threads of any server")]
    memory_gib: Annotated[PositiveInt, _at_most(hardware.MAX_SERVER_MEMORY_GIB, "the memory of any server, in GiB")]
    gpu: GpuSpec | None = None
    nics: list[NicSpec] = []
    nvme: list[NvmeSpec] = []
    mig_layout: Name | None = None  # default layout for nodes of this profile


TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(Strict):
    key: LabelKey
    value: LabelValue = ""
    effect: TaintEffect


NodeRole = Literal["control-plane", "system", "gpu", "storage"]


class Node(Strict):
    name: Name
    profile: Name
    rack: Name
    roles: Annotated[list[NodeRole], Field(min_length=1)]
    labels: dict[LabelKey, LabelValue] = {}
    taints: list[Taint] = []
    mig_layout: Name | None = None  # overrides the profile's


PoolRole = Literal["system", "gpu", "cpu"]


class NodePool(Strict):
    """Nodes a cloud cluster makes on demand (a Karpenter NodePool and EC2NodeClass), up to max_count.

    role system: the managed node group the controllers (Karpenter itself among them) run on,
    created with the cluster (eksctl/Terraform), never by Karpenter: forge generates no NodePool
    for it, only places controllers there."""

    name: Name
    instance_type: InstanceTypeKey  # a key of `instances` in the hardware catalogue
    role: PoolRole
    capacity_type: CapacityType
    max_count: Annotated[PositiveInt, _at_most(1000, "the nodes one pool of a cluster may make")]
    # Attach the EFA interfaces of the instance type (vpc.amazonaws.com/efa); unset: as many as it has.
    efa: bool | None = None
    # Karpenter's NodePool weight (1-100): of pools that could take a pod, the higher is tried first, the
    # others are its fallback. Unset: by capacity type, reserved 100, on-demand 50, spot 10.
    weight: Annotated[int, Field(ge=1, le=100)] | None = None
    # The name of an EC2 placement group (cluster strategy: one AZ, one network spine) the operator
    # created; Karpenter launches the pool's nodes into it (EC2NodeClass placementGroupSelector).
    placement_group: PlacementGroupName | None = None
    labels: dict[LabelKey, LabelValue] = {}
    taints: list[Taint] = []
    mig_layout: Name | None = None


class Inventory(Strict):
    # The inventory's format version (forge.inventory.formats): the loader refuses any other, an
    # older one with the hint to run `forge inventory migrate`.
    format: Literal[CURRENT] = Field(description=f"The inventory's format version: {CURRENT}. An older inventory is "
                                                 "rewritten by `forge inventory migrate`.")  # type: ignore[valid-type]
    cluster: ClusterSettings
    profiles: dict[Name, Profile] = {}
    # On premises: every node. A cloud cluster (cluster.cloud) lists node_pools instead.
    nodes: list[Node] = []
    node_pools: list[NodePool] = []
    # Per-component settings; each component validates its own block (forge.components).
    components: dict[str, dict[str, Any]] = {}
