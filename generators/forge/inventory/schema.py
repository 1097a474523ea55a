"""The inventory's shape: strict pydantic models, unknown keys forbidden, types not coerced.

Only the shape lives here; rules that span fields (duplicate names, unknown profiles, MIG
layouts a GPU cannot hold) live in `checks.py`, and derived facts in `forge.model`.
"""
from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from forge.hardware import GPU_MODELS, NIC_MODELS, SERVER_MODELS, unknown_model

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


Name = Annotated[str, Field(pattern=_DNS_LABEL, max_length=63)]
LabelKey = Annotated[str, AfterValidator(_label_key)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
Cidr = Annotated[str, AfterValidator(_cidr)]
GpuModelKey = Annotated[str, _one_of(GPU_MODELS, "GPU model")]
NicModelKey = Annotated[str, _one_of(NIC_MODELS, "NIC model")]
ServerModelKey = Annotated[str, _one_of(SERVER_MODELS, "server model")]
PositiveInt = Annotated[int, Field(gt=0)]
K8sVersion = Annotated[str, Field(pattern=r"^1\.[0-9]{2}$")]
S3Bucket = Annotated[str, Field(min_length=3, max_length=63)]
# A Linux network interface name: at most 15 characters (IFNAMSIZ - 1).
InterfaceName = Annotated[str, Field(pattern=r"^[a-zA-Z0-9_.-]{1,15}$")]


class ArgoDestination(Strict):
    server: str = "https://kubernetes.default.svc"


class ArgoSettings(Strict):
    namespace: Name = "argocd"
    project: Name
    destination: ArgoDestination = ArgoDestination()


class GitSettings(Strict):
    repo_url: Annotated[str, Field(pattern=r"^(https://|ssh://|git@)\S+$")]
    revision: Annotated[str, Field(min_length=1)]


class S3Settings(Strict):
    endpoint: Annotated[str, Field(pattern=r"^https?://\S+$")]
    region: Annotated[str, Field(min_length=1)]
    buckets: dict[Name, S3Bucket]
    credentials_secret: Name  # an existing Secret; forge never holds credentials


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


class GpuSpec(Strict):
    model: GpuModelKey
    count: PositiveInt
    nvlink: Annotated[int, Field(ge=0, le=5)] = 0  # NVLink generation; 0 = none


NicRole = Literal["compute", "storage", "frontend", "management"]


class NicSpec(Strict):
    model: NicModelKey
    count: PositiveInt
    ports: PositiveInt = 1  # ports per card that are cabled
    port_gbps: PositiveInt
    role: NicRole
    interfaces: list[InterfaceName]


class NvmeSpec(Strict):
    device: Annotated[str, Field(pattern=r"^/dev/nvme[0-9]+n[0-9]+$")]
    size_gb: PositiveInt  # vendor (decimal) gigabytes
    mount: Annotated[str, Field(pattern=r"^/[A-Za-z0-9_./-]+$")]


class Profile(Strict):
    server: ServerModelKey
    cpu_threads: PositiveInt
    memory_gib: PositiveInt
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


class Inventory(Strict):
    cluster: ClusterSettings
    profiles: dict[Name, Profile]
    nodes: Annotated[list[Node], Field(min_length=1)]
    # Per-component settings; each component validates its own block (forge.components).
    components: dict[str, dict[str, Any]] = {}
