"""Box-only: the status an operator the box does not run would write on its custom resources when
all is well, so that Argo CD's health check of each (its built-in Lua, or forge's) can pass and the
root Application can go on to the next wave.

The stand-in charts install no operator (forge.twin.argocd.stand_ins), so a resource whose health
Argo CD reads from its status (a ClusterSecretStore: "Waiting for ClusterSecretStore") stays
Progressing, and the root holds every later wave on it. While the runner waits, this writes the
status subresource only, in the operator's own shape (the upstream CRD's status schema, the
operator's reasons and messages), never the spec, and never anything the operator would do besides
(no Secret behind an ExternalSecret). Each kind it stands in for is said once in the run's output
and listed in docs/twin.md ("Status stand-ins"). What the box proves for these kinds is therefore
that they are served, valid and ordered, not that their operator would find them well.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from forge.errors import ForgeError
from forge.twin.kube import ApiError, Kube

Say = Callable[[str], None]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _store_ready(obj: dict[str, Any]) -> dict[str, Any]:
    """External Secrets v2.9.0 after validating a store (pkg/controllers/secretstore: ReasonStoreValid,
    "store validated"); `capabilities` is what the provider can do (AWS Secrets Manager: ReadWrite)."""
    return {"conditions": [{"type": "Ready", "status": "True", "reason": "Valid", "message": "store validated",
                            "lastTransitionTime": _now()}],
            "capabilities": "ReadWrite"}


def _external_secret_synced(obj: dict[str, Any]) -> dict[str, Any]:
    """External Secrets v2.9.0 after syncing an ExternalSecret (pkg/controllers/externalsecret:
    ConditionReasonSecretSynced, "secret synced"): the refresh time, the synced generation, the
    target Secret's name (spec.target.name, else the ExternalSecret's)."""
    meta, spec = obj["metadata"], obj.get("spec") or {}
    version = f"{meta.get('generation', 1)}-{hashlib.md5(meta['name'].encode()).hexdigest()}"  # noqa: S324 (a label, not security)
    return {"conditions": [{"type": "Ready", "status": "True", "reason": "SecretSynced", "message": "secret synced",
                            "lastTransitionTime": _now()}],
            "refreshTime": _now(), "syncedResourceVersion": version,
            "binding": {"name": (spec.get("target") or {}).get("name") or meta["name"]}}


# Network Operator 26.4.1: the NicClusterPolicy spec key -> the state that deploys it (pkg/state; the
# names its status.appliedStates carries); a state whose key the spec lacks is "ignore".
NIC_STATES = {
    "ofedDriver": "state-OFED", "rdmaSharedDevicePlugin": "state-RDMA-device-plugin",
    "sriovDevicePlugin": "state-SRIOV-device-plugin", "ibKubernetes": "state-ib-kubernetes",
    "nvIpam": "state-nv-ipam-cni", "nicFeatureDiscovery": "state-nic-feature-discovery",
    "docaTelemetryService": "state-doca-telemetry-service",
    "nicConfigurationOperator": "state-nic-configuration-operator", "spectrumXOperator": "state-spectrum-x-operator",
    "secondaryNetwork.multus": "state-multus-cni", "secondaryNetwork.cniPlugins": "state-container-networking-plugins",
    "secondaryNetwork.ipoib": "state-ipoib-cni", "secondaryNetwork.ipamPlugin": "state-whereabouts-cni",
}


def _nic_policy_ready(obj: dict[str, Any]) -> dict[str, Any]:
    """Network Operator 26.4.1 once every state its spec asks for is ready (the CRD's status: state,
    appliedStates; no conditions in this version)."""
    spec = obj.get("spec") or {}

    def asked(key: str) -> bool:
        head, _, rest = key.partition(".")
        value = spec.get(head)
        return value is not None and (not rest or (isinstance(value, dict) and value.get(rest) is not None))

    return {"state": "ready", "appliedStates": [{"name": name, "state": "ready" if asked(key) else "ignore"}
                                                for key, name in NIC_STATES.items()]}


@dataclass(frozen=True)
class StandIn:
    api_version: str
    kind: str
    operator: str  # whose status this is, as the run's output names it
    status: Callable[[dict[str, Any]], dict[str, Any]]  # the object -> the status its operator writes when well
    said: str  # the state written, in the operator's words

    def written(self, obj: dict[str, Any]) -> bool:
        """The object already carries the well state (this stand-in's, or a real operator's): a Ready
        condition that is True, or `state: ready`."""
        status = obj.get("status") or {}
        return status.get("state") == "ready" or any(c.get("type") == "Ready" and c.get("status") == "True"
                                                     for c in status.get("conditions") or [])


STAND_INS: tuple[StandIn, ...] = (
    StandIn("external-secrets.io/v1", "ClusterSecretStore", "External Secrets", _store_ready, "Ready"),
    StandIn("external-secrets.io/v1", "SecretStore", "External Secrets", _store_ready, "Ready"),
    StandIn("external-secrets.io/v1", "ExternalSecret", "External Secrets", _external_secret_synced, "Ready (secret synced)"),
    StandIn("mellanox.com/v1alpha1", "NicClusterPolicy", "the Network Operator", _nic_policy_ready, "state ready"),
)


def kube_from(kubeconfig: Path) -> Kube:
    """A client of the box's API server from the box's kubeconfig (forge.twin.controlplane.kubeconfig_text)."""
    config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    return Kube(cluster["server"], user["token"], Path(cluster["certificate-authority"]))


class StatusWriter:
    """Called on each poll of the runner's wait: writes the status of every object of a stood-in
    kind that has none yet, and says each kind once."""

    def __init__(self, kube: Kube, say: Say, stand_ins: tuple[StandIn, ...] = STAND_INS) -> None:
        self.kube, self.say, self.stand_ins = kube, say, stand_ins
        self.said: set[str] = set()

    def __call__(self) -> None:
        for stand_in in self.stand_ins:
            try:
                items = self.kube.list(stand_in.api_version, stand_in.kind)
            except ApiError:
                continue  # not served yet (its CRD comes with a later wave)
            for obj in items:
                if not stand_in.written(obj):
                    self.write(stand_in, obj)

    def write(self, stand_in: StandIn, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        path = self.kube.path(stand_in.api_version, stand_in.kind, meta["name"], meta.get("namespace"), "status")
        try:
            self.kube.request("PATCH", path, {"status": stand_in.status(obj)}, "application/merge-patch+json")
        except ApiError as exc:
            if exc.status in (404, 409):
                return  # gone, or changed since listed: the next poll sees it
            raise ForgeError(f"twin argocd: box-only status of {stand_in.kind}/{meta['name']} refused by the "
                             f"box's API server: {exc.message}") from None
        if stand_in.kind not in self.said:
            self.said.add(stand_in.kind)
            self.say(f"twin argocd: box-only: status of {stand_in.kind}/{meta['name']} written as "
                     f"{stand_in.operator} would: {stand_in.said}")
