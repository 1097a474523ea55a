"""The shape every component has. A component is a plug-in: one module, one `Component`
subclass, one line in `forge.components.COMPONENTS`.

What a component gives the pipeline:
- `values(cluster)`: Helm values for its pinned upstream chart (None when it has no chart);
- `manifests(cluster)`: extra Kubernetes objects for its overlay (custom resources, ConfigMaps);
- `remote_base(cluster)`: for projects with no Helm chart, upstream kustomize manifests at a
  pinned git tag, deployed as one more source of the Application (see RemoteBase);
- `check(loaded, settings, given)`: inventory rules spanning its settings and the rest of the
  inventory (`given`: the typed settings of the inventory's other blocks, for rules that span
  components);
- `derive_facts(cluster)`: what the component derives from the inventory, once, into a frozen
  dataclass (tier layout, capacity, served nodes); every other hook reads `self.facts(cluster)`;
- `runtime_crd_data()`: CRDs its operator applies at run time, and the upstream data folder that
  has them (validation reads them from there);
- `expected_in_hydrated(cluster)`: fields the objects its chart renders must carry (checked on
  the hydrated output, e.g. the GPU Operator's ClusterPolicy has the driver version we asked for);
- `guarded_values(cluster)`: values paths a per-cluster override may not change (Flyte's login);
- class attributes that the Argo CD bootstrap and validation read: namespace, sync wave, chart
  key in charts/versions.yaml, cluster-scoped kinds its chart creates (for the AppProject), and
  values keys the chart reads but documents only in comments (so the values check knows them).
Its hand-written `base/<name>/` holds what never varies: the Namespace with its Pod Security level.
Everything cluster-specific comes from the `ClusterModel` that `forge.fleet` built: its typed
settings (`self.settings(cluster)`, validated once) and facts (`self.facts(cluster)`, derived
once). A component never reads files and never validates raw settings itself.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, Mapping, NamedTuple, Sequence

from pydantic import BaseModel, ConfigDict

from forge.components.network import Allow
from forge.model.cluster import ClusterModel, NodeModel

if TYPE_CHECKING:
    from forge.errors import Problem
    from forge.inventory.loader import LoadedInventory
    from forge.model.secrets import SecretUse

# Sync waves of the child Applications: foundations (node labels, CRD-only pieces) first,
# then operators in dependency order, then what runs on top of them.
WAVE_FOUNDATION = -10
WAVE_SECRETS = -8  # External Secrets Operator: before anything that reads a Secret
WAVE_MONITORING_CRDS = -5
WAVE_NETWORK = 0
WAVE_GPU = 10
WAVE_OPERATORS = 20
WAVE_KUEUE = 25  # after the job operators' CRDs, before Flyte submits jobs
WAVE_STORAGE = 30
WAVE_WORKLOADS = 40
WAVE_OBSERVABILITY = 50



def kinds(group: str, *names: str) -> tuple[tuple[str, str], ...]:
    """(group, kind) pairs of one API group, for `cluster_kinds` and `namespaced_kinds`."""
    return tuple((group, name) for name in names)


# What nearly every chart renders: its workloads' service accounts, configuration and services.
WORKLOAD_KINDS = kinds("", "ServiceAccount", "ConfigMap", "Service") + kinds("apps", "Deployment")
RBAC_NAMESPACED = kinds("rbac.authorization.k8s.io", "Role", "RoleBinding")

# Inside one Application: CRDs (wave 0 by default) before the custom resources that need them.
CR_SYNC_WAVE = "5"


@dataclass(frozen=True)
class RemoteBase:
    """Upstream manifests a component deploys from a git repository pinned to a tag, for projects
    that publish kustomize manifests and no Helm chart (Kubeflow's training-operator).

    Argo CD builds `path` of `repo_url` at `revision` as one more source of the component's
    Application, with `patches` (kustomize patches, as Argo CD's `source.kustomize.patches`)
    applied; forge's own overlay stays a separate source. forge never fetches it: `forge render`
    builds only our overlay, as it does for charts.
    """

    repo_url: str
    revision: str  # a tag: never a branch, so a resync cannot change what runs
    path: str
    patches: tuple[dict[str, Any], ...] = field(default=())


@dataclass(frozen=True)
class RuntimeCrds:
    """CRDs an operator applies at run time rather than its chart shipping them (the Network
    Operator applies nv-ipam's IPPool and CIDRPool CRDs when the NicClusterPolicy enables nvIpam).
    `forge validate --upstream DIR` checks the component's objects of these kinds against
    DIR/<data_dir>/crds/ (a missing folder is a failure); without DIR they are unchecked, as
    every custom resource is. Hydration lists `kinds` among the cluster's API versions."""

    data_dir: str  # the upstream data folder, named after the operator release that ships the CRDs
    group_version: str  # e.g. nv-ipam.nvidia.com/v1alpha1
    kinds: tuple[str, ...]

    @property
    def group(self) -> str:
        return self.group_version.rpartition("/")[0]

    def api_versions(self) -> set[str]:
        """As `helm template --api-versions` takes them: group/version and group/version/Kind."""
        return {self.group_version} | {f"{self.group_version}/{kind}" for kind in self.kinds}


@dataclass(frozen=True)
class Scrape:
    """Where Prometheus finds a component's metrics, for a PodMonitor: pods matched by `selector`
    (a label selector) in `namespace`, port number `port` (charts often name no port), `path`.
    Declared by the component that runs the pods, its one home; the prometheus component reads it."""

    name: str  # the PodMonitor's name
    namespace: str
    selector: dict[str, Any]
    port: int
    path: str


class Expected(NamedTuple):
    """A field a custom resource (or other object) in the component's hydrated output must have:
    what the inventory asked for, checked after the upstream chart turned our values into it.

    Path parts: a mapping key; a list index ("0"); `field=value`, the list item whose `field` is
    `value` (a container by its name: "containers", "name=flyte"). A string met before the path
    ends is read as YAML (a ConfigMap's file: ("data", "003-storage.yaml", "storage", "type")), or
    as INI when its key ends in .ini (("data", "grafana.ini", "auth", "disable_login_form"): "true").
    `value` is compared exactly, or is a `Contains`."""

    kind: str
    name: str  # metadata.name
    path: str | tuple[str, ...]  # dotted ("spec.driver.version"), or a tuple when a key has dots
    value: Any


class Contains:
    """An Expected value that need not be the whole field: a list must hold each item; a string
    (a command line of -D options) must hold each item as one of its whitespace-separated words."""

    def __init__(self, *items: Any):
        self.items = items

    def missing(self, actual: Any) -> list[Any] | None:
        """The items `actual` lacks, or None when it is neither a list nor a string."""
        if isinstance(actual, str):
            words = set(actual.split())
            return [i for i in self.items if i not in words]
        if isinstance(actual, list):
            return [i for i in self.items if i not in actual]
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Contains) and other.items == self.items

    def __repr__(self) -> str:
        return f"Contains{self.items!r}"

    def __str__(self) -> str:
        return "containing " + ", ".join(map(str, self.items))


class NoSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Component:
    name: ClassVar[str]  # folder under overlays/<cluster>/ and base/, Application suffix
    namespace: ClassVar[str]
    # Namespaces beyond its own that its chart or manifests put objects into, whatever the inventory
    # says (kube-system, for a Role a chart binds there): AppProject destinations, and reserved so no
    # Flyte project-domain namespace is one (forge.fleet.scope).
    other_namespaces: ClassVar[tuple[str, ...]] = ()
    sync_wave: ClassVar[int]
    chart: ClassVar[str | None] = None  # key in charts/versions.yaml
    release_name: ClassVar[str | None] = None  # defaults to the component name
    # Automated pruning. Off only for Applications that hold nothing but CRDs: a CRD that leaves the
    # chart must be removed by a person, since deleting it deletes every resource of its kind.
    prune: ClassVar[bool] = True
    server_side_apply: ClassVar[bool] = False  # large CRDs exceed client-side apply's annotation limit
    # API groups whose CRDs this component's chart installs in our clusters: where several charts
    # carry the same CRD, validation uses this chart's copy.
    crd_groups: ClassVar[tuple[str, ...]] = ()
    # Cluster-scoped kinds the component's chart and manifests create, as (group, kind).
    cluster_kinds: ClassVar[tuple[tuple[str, str], ...]] = ()
    # Namespaced kinds its chart (or remote base) renders with forge's values, as (group, kind), from
    # the chart's templates at the pinned version: forge's own render cannot show them, and its
    # AppProject allows only these and the kinds of forge's own objects (forge.argocd.projects).
    namespaced_kinds: ClassVar[tuple[tuple[str, str], ...]] = ()
    # API groups of the custom resources its Application creates CRDs for (crd_groups where empty):
    # an Application that renders another's custom resources syncs in a later wave and retries
    # until they exist (forge.argocd.order).
    api_groups: ClassVar[tuple[str, ...]] = ()
    # Values keys the chart reads but documents only in comments, as dotted paths.
    declared_values: ClassVar[frozenset[str]] = frozenset()
    # Values keys set on purpose even where they equal the chart's default, so `forge validate
    # --hydrated` does not call them redundant: computed from the inventory (set on every cluster,
    # whatever the result), or a choice the component depends on (an image pin, a storage type).
    inventory_values: ClassVar[frozenset[str]] = frozenset()
    Settings: ClassVar[type[BaseModel]] = NoSettings
    # Argo CD ignoreDifferences entries: fields a controller owns at runtime (webhook certificates).
    ignore_differences: ClassVar[tuple[dict[str, Any], ...]] = ()
    # Data keys of a Secret its chart writes at render time (random tokens the chart generates, or
    # a copy of our values, which hold no credential), never from Git: `forge validate --hydrated`
    # does not call a chart Secret with only these keys a credential in Git.
    rendered_secret_keys: ClassVar[frozenset[str]] = frozenset()
    # Why the pods its chart renders cannot name a PriorityClass above every workload class (no
    # values key for it), or "" (forge.validate.cluster_policies checks them).
    priority_exception: ClassVar[str] = ""

    def enabled(self, cluster: ClusterModel) -> bool:
        return True

    def settings(self, cluster: ClusterModel) -> Any:
        """This component's typed settings on `cluster` (validated once, by the fleet stage)."""
        return cluster.component_settings[self.name]

    def facts(self, cluster: ClusterModel) -> Any:
        """What `derive_facts` derived for `cluster` (once, by the fleet stage)."""
        return cluster.component_facts[self.name]

    def derive_facts(self, cluster: ClusterModel) -> Any:
        """The component's facts about `cluster`, as a frozen dataclass, or None when it has none.
        Called once per cluster by the fleet stage, after settings are typed; hooks only read it."""
        return None

    def check(self, loaded: "LoadedInventory", settings: Any, given: Mapping[str, Any]) -> "Iterator[Problem]":
        """Rules that span this component's settings and the rest of the inventory (buckets it
        names, nodes it needs). Called with the validated Settings; `given` maps every other
        component block of the inventory to its typed settings, or to None when that block is
        not valid (its own problems are reported: a rule should not guess from it). Yields
        `loaded.problem(...)`."""
        return iter(())

    def chart_kinds(self, cluster: ClusterModel) -> tuple[tuple[str, str], ...]:
        """The namespaced kinds its chart renders on `cluster`: `namespaced_kinds`, plus any the
        inventory switches on (Grafana's Ingress, forge.components.prometheus)."""
        return self.namespaced_kinds

    def namespaces(self, cluster: ClusterModel) -> tuple[str, ...]:
        """Every namespace the component's Application deploys into (for the AppProject): its own,
        `other_namespaces`, plus any its manifests name from the inventory (Flyte's project namespaces)."""
        return (self.namespace, *self.other_namespaces)

    def settings_namespaces(self, settings: Any) -> dict[str, str]:
        """Namespaces its typed settings name that it (or its operator) writes into, each with the
        setting that names it (the Network Operator's network_namespace): reserved as the
        component's (forge.fleet.scope), so no Flyte project-domain namespace is one."""
        return {}

    def owned_namespaces(self, cluster: ClusterModel) -> tuple[str, ...]:
        """The namespaces whose Namespace object forge ships for this component (base/<name>/,
        Flyte's project namespaces): each gets a default-deny NetworkPolicy and the component's
        `ingress` (forge.components.network)."""
        return (self.namespace,)

    def ingress(self, cluster: ClusterModel) -> tuple[Allow, ...]:
        """What may reach the component's pods from outside their namespace: its real peers,
        Prometheus on its metrics ports, the API server on its webhook ports."""
        return ()

    def isolated_pods(self, cluster: ClusterModel) -> Mapping[str, str] | None:
        """Pods (one label) that `allow-same-namespace` leaves out: only the component's Allows
        that name them reach them, even from their own namespace (Prometheus: forge.components.prometheus)."""
        return None

    def remote_base(self, cluster: ClusterModel) -> RemoteBase | None:
        """Upstream kustomize manifests deployed in place of a chart (chart stays None)."""
        return None

    def values(self, cluster: ClusterModel) -> dict[str, Any] | None:
        return None

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        return []

    def fleet_manifests(self, cluster: ClusterModel, components: Sequence["Component"]) -> list[dict[str, Any]]:
        """manifests(), for a component whose objects depend on the others the cluster runs
        (`components`: all of them, this one included): the secret store's namespaces."""
        return self.manifests(cluster)

    def values_notes(self, cluster: ClusterModel) -> list[str]:
        """Lines for a comment under the header of values.yaml: why a value is what it is, where
        the reader of the generated file needs it (the driver branch of a mixed cluster)."""
        return []

    def extra_releases(self, cluster: ClusterModel) -> dict[str, dict[str, Any]]:
        """More releases of the component's pinned chart, release name -> values: each one more
        chart source of the same Application (Argo CD renders each with its own values file,
        `values-<release>.yaml` beside `values.yaml`). Alluxio's worker pools use it."""
        return {}

    def node_features(self, cluster: ClusterModel, node: NodeModel) -> dict[str, dict[str, str]]:
        """What nfd-worker reports of a healthy `node` because of this component's own agents
        (feature -> attribute -> value, e.g. a local feature file a probe writes): the fleet in
        a box evaluates forge's NodeFeatureRules against these, as nfd-master would."""
        return {}

    def runtime_crd_data(self) -> tuple[RuntimeCrds, ...]:
        """CRDs the component's operator applies itself at run time (not in its chart), which its
        manifests use, and the upstream data folder that has them: validation reads them there.
        Not per cluster: the folder follows the pinned release (charts/versions.yaml)."""
        return ()

    def examples(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        """Objects for people to copy, written under overlays/<cluster>/<name>/examples/: not in
        the kustomization, so Argo CD never syncs them."""
        return []

    def secrets(self, cluster: ClusterModel) -> "list[SecretUse]":
        """Secrets its pods or chart values read, which the cluster's secret store must produce
        (forge.components.external_secrets writes an ExternalSecret for each into this overlay)."""
        return []

    def produced_secrets(self, cluster: ClusterModel) -> dict[str, str]:
        """Secrets its chart or controller creates at run time (webhook certificates), by name,
        each with the reason: the secret-reference check accepts them in its namespaces."""
        return {}

    def local_files(self, cluster: ClusterModel) -> dict[str, Any]:
        """Files for people, not for the cluster (a client configuration), as {path under
        overlays/<cluster>/<name>/: YAML data}: outside the kustomization, never synced."""
        return {}

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        """Fields the objects the chart renders from our values must have (`forge validate
        --hydrated` checks them): catches a value the chart dropped or moved on the way."""
        return []

    def guarded_values(self, cluster: ClusterModel) -> dict[str, str]:
        """Dotted paths of our Helm values that a per-cluster override may not change, with why
        (forge.generate.overrides.check_merged, after merging: a path absent here stays absent). For what
        the inventory guarantees, such as a login, which an override must not turn off."""
        return {}

    @property
    def release(self) -> str:
        """The Helm release name, as the Argo CD Application passes it to `helm template`."""
        return self.release_name or self.name

    @property
    def module(self) -> str:
        return type(self).__module__


def storage_class(cluster: ClusterModel, override: str | None) -> str:
    """The StorageClass a component's volumes name: its own override, else the cluster's
    (`storage_class_problem` in the component's check made sure one is set)."""
    chosen = override or cluster.settings.storage_class
    if chosen is None:
        raise ValueError(f"{cluster.name}: no StorageClass (the inventory check should have refused this)")
    return chosen


def storage_class_problem(loaded: "LoadedInventory", override: str | None, component: str, what: str) -> "Iterator[Problem]":
    """A problem at cluster.storage_class when neither it nor the component's override is set."""
    if override is None and loaded.inventory.cluster.storage_class is None:
        yield loaded.problem(("cluster",), f"no storage_class: {component} claims volumes ({what}); set cluster.storage_class "
                                           f"(or components.{component}.storage_class) instead of relying on a default StorageClass")


def extra_values_file(release: str) -> str:
    """The values file of one more release of a component's chart (Component.extra_releases)."""
    return f"values-{release}.yaml"


def custom_resource(obj: dict[str, Any]) -> dict[str, Any]:
    """Mark a custom resource to sync after the CRDs of its Application, which may not exist yet
    at dry-run time."""
    annotations = obj.setdefault("metadata", {}).setdefault("annotations", {})
    annotations["argocd.argoproj.io/sync-wave"] = CR_SYNC_WAVE
    annotations["argocd.argoproj.io/sync-options"] = "SkipDryRunOnMissingResource=true"
    return obj
