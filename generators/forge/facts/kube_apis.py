"""What a Kubernetes API server serves: the built-in API group/versions of each minor forge
supports, which of them it serves with default flags, and the kinds a feature gate must also turn
on. Facts about upstream Kubernetes, in one place: the inventory's `cluster.api_server` adds to
them (on premises), the model derives what each cluster serves, forge validate refuses output that
uses anything else, and the fleet in a box starts kube-apiserver with exactly those flags.

tests/twin/test_api_served.py checks DEFAULT_ON against the real kube-apiserver of the pinned
version: with default flags (h200-burst's box) it serves exactly those built-in group/versions,
and with h200's flags those and admissionregistration.k8s.io/v1beta1. OFF_BY_DEFAULT is from the
1.34 API reference (its alpha and beta versions), not yet checked against the binary.
"""
from __future__ import annotations

from dataclasses import dataclass

# kube-apiserver 1.34's built-in group/versions it serves with default flags ("v1" is the core group).
_DEFAULT_134 = frozenset({
    "v1", "admissionregistration.k8s.io/v1", "apiextensions.k8s.io/v1", "apiregistration.k8s.io/v1", "apps/v1",
    "authentication.k8s.io/v1", "authorization.k8s.io/v1", "autoscaling/v1", "autoscaling/v2", "batch/v1",
    "certificates.k8s.io/v1", "coordination.k8s.io/v1", "discovery.k8s.io/v1", "events.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1", "networking.k8s.io/v1", "node.k8s.io/v1", "policy/v1",
    "rbac.authorization.k8s.io/v1", "resource.k8s.io/v1", "scheduling.k8s.io/v1", "storage.k8s.io/v1",
})
# Built-in group/versions 1.34 has but serves only when `--runtime-config` turns them on (alpha and
# beta APIs: since 1.24 no new beta API is on by default).
_OFF_134 = frozenset({
    "admissionregistration.k8s.io/v1alpha1", "admissionregistration.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1", "certificates.k8s.io/v1beta1",
    "coordination.k8s.io/v1alpha2", "coordination.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1", "networking.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3", "resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2",
    "scheduling.k8s.io/v1alpha1", "storage.k8s.io/v1alpha1", "storage.k8s.io/v1beta1",
    "storagemigration.k8s.io/v1alpha1",
})
DEFAULT_ON = {"1.34": _DEFAULT_134}
OFF_BY_DEFAULT = {"1.34": _OFF_134}
# Kinds a group/version serves only with a feature gate on as well (beta gates off by default).
GATED_KINDS = {
    ("admissionregistration.k8s.io/v1beta1", "MutatingAdmissionPolicy"): "MutatingAdmissionPolicy",
    ("admissionregistration.k8s.io/v1beta1", "MutatingAdmissionPolicyBinding"): "MutatingAdmissionPolicy",
    ("admissionregistration.k8s.io/v1alpha1", "MutatingAdmissionPolicy"): "MutatingAdmissionPolicy",
    ("admissionregistration.k8s.io/v1alpha1", "MutatingAdmissionPolicyBinding"): "MutatingAdmissionPolicy",
}
# Where the facts of a managed control plane come from: it serves the upstream defaults only.
MANAGED_DEFAULTS = {"aws": "EKS runs the control plane with the upstream defaults and takes no feature gates "
                           "or runtime-config (aws/containers-roadmap#512)"}


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def built_in(version: str, api_version: str) -> bool:
    """Whether `api_version` belongs to a group kube-apiserver serves itself (not a CRD's)."""
    groups = {group_of(gv) for gv in DEFAULT_ON.get(version, ()) | OFF_BY_DEFAULT.get(version, frozenset())}
    return group_of(api_version) in groups


@dataclass(frozen=True)
class Served:
    """What one cluster's API server serves: the Kubernetes minor, the group/versions turned on
    beyond the defaults and the feature gates on, with the inventory line that says so."""

    version: str
    runtime_config: frozenset[str] = frozenset()
    feature_gates: frozenset[str] = frozenset()
    source: str = ""  # "clusters/<name>/inventory.yaml:<line>: <field>": the inventory fact, named in errors

    @property
    def group_versions(self) -> frozenset[str]:
        return DEFAULT_ON.get(self.version, frozenset()) | self.runtime_config

    def missing(self, api_version: str, kind: str) -> str | None:
        """Why the API server refuses objects of this kind, or None when it serves them (or when
        the group is not built in: a CRD's, which the sync installs itself)."""
        if not built_in(self.version, api_version):
            return None
        if api_version not in self.group_versions:
            return f"{api_version} is off by default in Kubernetes {self.version} and not in the cluster's runtime-config"
        gate = GATED_KINDS.get((api_version, kind))
        if gate and gate not in self.feature_gates:
            return f"{kind} needs the feature gate {gate}, which the cluster's API server does not enable"
        return None

    def serves(self, api_version: str, kind: str) -> bool:
        return self.missing(api_version, kind) is None

    def flags(self) -> list[str]:
        """kube-apiserver's flags for exactly this (none beyond the defaults)."""
        out = []
        if self.feature_gates:
            out += ["--feature-gates", ",".join(f"{g}=true" for g in sorted(self.feature_gates))]
        if self.runtime_config:
            out += ["--runtime-config", ",".join(f"{gv}=true" for gv in sorted(self.runtime_config))]
        return out
