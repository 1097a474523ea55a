"""Argo CD's own configuration for one cluster, shipped in Git (clusters/<cluster>/argocd/config/)
and synced first by the root Application, so a fresh Argo CD converges from Git alone:

- one repository Secret per source the Applications use (`argocd.argoproj.io/secret-type:
  repository`): the git repositories, the Helm repositories, and Kueue's OCI registry with
  `enableOCI: "true"` (without it Argo CD cannot render a chart from `registry.k8s.io/kueue/charts`).
  They carry no credential: every source is public. A private source's credential would come from
  the secret store (an ExternalSecret), never from Git.
- `argocd-cm`'s resource customizations: the health of `argoproj.io/Application` (without it the
  root Application does not wait for a wave's Applications to be healthy, and sync waves order
  nothing), and of the operators' cluster policies from their `status.state`
  (`nvidia.com/ClusterPolicy`, `nvidia.com/NVIDIADriver`, `mellanox.com/NicClusterPolicy`):
  Progressing while the operator rolls out, Healthy when it reports ready, Degraded when it
  reports an error or ignores the object. A GPU Operator `notReady` only because of its per-node
  operands (a driver DaemonSet pod unavailable on one node, an OnDelete driver rollout going node
  by node) is Healthy with a message starting PER_NODE_MARK: the root Application waits for a
  wave's health, so anything else would hold every later wave on one node waiting for repair.
  Those nodes are judged by `forge promote`'s gates, which refuse on that message unless
  accepted on the record (forge.rollout.accept).

Argo CD has no installation-wide retry setting: the retry policy is each Application's
`syncPolicy.retry` (forge.argocd.order). Only the keys forge sets are applied, server-side, so the
installation's other `argocd-cm` keys stay as they are; the ConfigMap is never pruned nor deleted.
"""
from __future__ import annotations

from typing import Any

from forge.components.base import Component
from forge.model.cluster import ClusterModel
from forge.facts.versions import ChartPin

CONFIG_DIR = "config"  # clusters/<cluster>/argocd/config/
CONFIG_WAVE = "-100"  # in the root Application: before the AppProjects and every child Application
ARGOCD_PART_OF = {"app.kubernetes.io/part-of": "argocd"}  # what Argo CD's settings informer selects
REPOSITORY_LABEL = "argocd.argoproj.io/secret-type"
# The keys a repository Secret may carry in Git: where and what, never who (no username, password,
# sshPrivateKey, tlsClientCertKey, githubApp*...). forge.validate.policies allows only these.
REPOSITORY_KEYS = frozenset({"name", "url", "type", "enableOCI", "project"})
_OWN_SYNC = "ServerSideApply=true,Prune=false,Delete=false"

_STATE_HEALTH = """\
local hs = {{status = "Progressing", message = "waiting for the operator to report status.state"}}
if obj.status == nil or obj.status.state == nil then
  return hs
end
local state = obj.status.state
{per_node}
local detail = ""
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.message ~= nil and c.message ~= "" and c.status ~= nil and
       ((c.type == "Ready" and c.status == "False") or (c.type == "Error" and c.status == "True")) then
      detail = ": " .. c.message
    end
  end
end
if obj.status.reason ~= nil and obj.status.reason ~= "" then
  detail = ": " .. obj.status.reason
end
if state == "ready" then
  hs.status = "Healthy"
  hs.message = "{kind} is ready"
elseif state == "notReady" and per_node() then
  hs.status = "Healthy"
  hs.message = "{mark}: {kind} is notReady only on its per-node operands" .. detail
elseif state == "notReady" then
  hs.status = "Progressing"
  hs.message = "{kind} is rolling out (notReady)" .. detail
elseif {degraded} then
  hs.status = "Degraded"
  hs.message = "{kind} state is " .. state .. detail
else
  hs.message = "{kind} state is " .. state .. detail
end
return hs
"""

# The health of a child Application, which the root waits on wave by wave. Argo CD's documented
# check ("Argo CD App health") passes the child's own health through, but a child that cannot render
# (a chart that cannot be pulled: ComparisonError) has no resources and reports Healthy, so the
# root went on to every later wave at once (seen in the box with the real Argo CD v3.6.2: alloy's
# PodMonitors, wave 50, before prometheus-crds, wave -5). So a child is Progressing, holding the
# later waves, while it cannot render or its spec is refused, and until a sync of it has succeeded
# once; a child that drifts OutOfSync after a successful sync is judged by its health, so one
# field a controller rewrites does not hold every later root sync. Progressing, not Degraded: a
# Degraded child fails the root's sync operation, and the root would retry it only by backoff.
# The root syncs itself too (root-application.yaml is in its own path, wave 0), and its sync waits for
# that wave's health, which this check gives: judged by the rule above, the root is OutOfSync with its
# own operation Running, so it waited for itself for ever and no wave after 0 was ever created (seen in
# the box, "waiting for healthy state of argoproj.io/Application/a100-root"). So an Application that
# Argo CD tracks as its own resource (its tracking-id annotation, or the instance label, names it) is
# Healthy: nothing else waits on the root, and Argo CD leaves a self-referenced Application out of its
# own health (v3.6.2 controller/health.go, isSelfReferencedApp). Compared whole, with `..` only: Argo
# CD runs health checks without Lua's string library (util/lua/lua.go opens base, table, os only;
# `string.sub` made every child Application's health Unknown in the box).
APPLICATION_HEALTH = """\
local hs = {status = "Progressing", message = ""}
local meta = obj.metadata or {}
local tracking = (meta.annotations or {})["argocd.argoproj.io/tracking-id"]
if meta.name ~= nil and (tracking == meta.name .. ":argoproj.io/Application:" .. (meta.namespace or "") .. "/" .. meta.name
    or (meta.labels or {})["app.kubernetes.io/instance"] == meta.name) then
  hs.status = "Healthy"
  hs.message = "manages itself: its own sync does not wait for itself"
  return hs
end
if obj.status == nil then
  return hs
end
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "ComparisonError" or c.type == "InvalidSpecError" then
      hs.message = c.type .. ": " .. (c.message or "")
      return hs
    end
  end
end
local synced = obj.status.sync ~= nil and obj.status.sync.status == "Synced"
local op = obj.status.operationState
local succeeded = op ~= nil and op.phase == "Succeeded"
if not synced and not succeeded then
  hs.message = "not yet synced"
  if op ~= nil and op.message ~= nil then
    hs.message = "sync " .. (op.phase or "") .. ": " .. op.message
  end
  return hs
end
if obj.status.health ~= nil then
  hs.status = obj.status.health.status
  if obj.status.health.message ~= nil then
    hs.message = obj.status.health.message
  end
end
return hs
"""


def _degraded(states: tuple[str, ...]) -> str:
    return " or ".join(f'state == "{s}"' for s in states)


# (group, kind) -> the states (besides ready and notReady) that are Degraded, from each CRD's
# status.state enum: ClusterPolicy ignored|ready|notReady, NVIDIADriver ignored|ready|notReady|
# disabled (GPU Operator v26.7.0), NicClusterPolicy ignore|notReady|ready|error (26.4.1).
STATE_KINDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("nvidia.com", "ClusterPolicy"): ("ignored",),
    ("nvidia.com", "NVIDIADriver"): ("ignored", "disabled"),
    ("mellanox.com", "NicClusterPolicy"): ("ignore", "error"),
}


# What forge promote looks for in a resource's health message (forge.rollout.gates).
PER_NODE_MARK = "not ready on some GPU nodes"

# GPU Operator v26.7.0's ClusterPolicy states (controllers/state_manager.go addState) that are
# DaemonSets on the GPU nodes: one node's pod unavailable, or a pod at an old revision under
# OnDelete, makes the state notReady (object_controls.go isDaemonSetReady). Only pre-requisites and
# state-operator-metrics are the operator's own; a state not named here is not per-node.
PER_NODE_STATES = (
    "state-driver", "state-container-toolkit", "state-operator-validation", "state-device-plugin",
    "state-mps-control-daemon", "state-dcgm", "state-dcgm-exporter", "gpu-feature-discovery",
    "state-mig-manager", "state-node-status-exporter", "state-vgpu-manager", "state-vgpu-device-manager",
    "state-sandbox-validation", "state-vfio-manager", "state-sandbox-device-plugin",
    "state-kata-device-plugin", "state-kata-manager", "state-cc-manager",
)

# ClusterPolicy: the Error condition of reason OperandNotReady says "ClusterPolicy is not ready;
# states not ready: [a b]" and, for an NVIDIADriver rollout, "NVIDIADriver upgrade has not
# completed" (clusterpolicy_controller.go clusterPolicyNotReadyMessage). Per-node when every state
# it lists is. A ReconcileFailed (the operator could not apply its objects) is not.
_CLUSTER_POLICY_PER_NODE = """\
local PER_NODE = {{{states}}}
local function per_node()
  for _, c in ipairs(obj.status.conditions or {{}}) do
    if c.type == "Error" and c.status == "True" and c.reason == "OperandNotReady" and c.message ~= nil then
      local listed = string.match(c.message, "states not ready: %[([^%]]*)%]")
      if listed ~= nil then
        for s in string.gmatch(listed, "[^%s]+") do
          if not PER_NODE[s] then return false end
        end
        return true
      end
      return string.find(c.message, "NVIDIADriver upgrade has not completed", 1, true) ~= nil
    end
  end
  return false
end"""

# NVIDIADriver: notReady with reason DriverNotReady is its driver DaemonSet's pods on the nodes
# (nvidiadriver_controller.go); any other reason is the controller's own trouble.
_DRIVER_PER_NODE = """\
local function per_node()
  for _, c in ipairs(obj.status.conditions or {}) do
    if c.type == "Error" and c.status == "True" and c.reason == "DriverNotReady" then return true end
  end
  return false
end"""

_NOT_PER_NODE = "local function per_node() return false end"


def _per_node(group: str, kind: str) -> str:
    if (group, kind) == ("nvidia.com", "ClusterPolicy"):
        return _CLUSTER_POLICY_PER_NODE.format(states=", ".join(f'["{s}"] = true' for s in PER_NODE_STATES))
    if (group, kind) == ("nvidia.com", "NVIDIADriver"):
        return _DRIVER_PER_NODE
    return _NOT_PER_NODE


def health_key(group: str, kind: str) -> str:
    return f"resource.customizations.health.{group}_{kind}"


# Argo CD runs a health check with Lua's base, table and a safe os library only (v3.6.2
# util/lua/lua.go), unless argocd-cm's `resource.customizations.useOpenLibs.<group>_<kind>` is true.
# ClusterPolicy's per-node check reads the operator's message (string.match, string.gmatch): without
# the key, a ClusterPolicy that is notReady has no health but a Lua error ("attempt to index a
# non-table object(nil)"), and its wave waits for ever.
OPEN_LIBS: frozenset[tuple[str, str]] = frozenset({("nvidia.com", "ClusterPolicy")})


def open_libs_key(group: str, kind: str) -> str:
    return f"resource.customizations.useOpenLibs.{group}_{kind}"


def health_checks() -> dict[str, str]:
    """argocd-cm key -> Lua health script (and "true" for the scripts that need Lua's libraries)."""
    out = {health_key("argoproj.io", "Application"): APPLICATION_HEALTH}
    for (group, kind), degraded in STATE_KINDS.items():
        out[health_key(group, kind)] = _STATE_HEALTH.format(kind=kind, degraded=_degraded(degraded),
                                                            per_node=_per_node(group, kind), mark=PER_NODE_MARK)
        if (group, kind) in OPEN_LIBS:
            out[open_libs_key(group, kind)] = "true"
    return out


def repositories(cluster: ClusterModel, components: list[Component], pins: dict[str, ChartPin]) -> list[dict[str, str]]:
    """One entry per source repository of the cluster's Applications, sorted by URL."""
    repos: dict[str, dict[str, str]] = {cluster.settings.git.repo_url: {"type": "git"}}
    for c in components:
        if c.chart:
            pin = pins[c.chart]
            entry = {"type": "helm", "name": _secret_name(pin.argocd_repo).removeprefix("repo-")}  # one per repository, not per chart
            if pin.repo.startswith("oci://"):
                entry["enableOCI"] = "true"
            repos[pin.argocd_repo] = entry
        if remote := c.remote_base(cluster):
            repos[remote.repo_url] = {"type": "git"}
    return [{"url": url, **fields} for url, fields in sorted(repos.items())]


def _secret_name(url: str) -> str:
    stem = url.split("://", 1)[-1].removesuffix(".git").removesuffix("/")
    cleaned = "".join(ch if ch.isalnum() else "-" for ch in stem.lower())
    return "repo-" + "-".join(p for p in cleaned.split("-") if p)[:58].rstrip("-")


def config_objects(cluster: ClusterModel, components: list[Component], pins: dict[str, ChartPin]) -> dict[str, dict[str, Any]]:
    """File name inside config/ -> object."""
    namespace = cluster.settings.argocd.namespace
    annotations = {"argocd.argoproj.io/sync-wave": CONFIG_WAVE, "argocd.argoproj.io/sync-options": _OWN_SYNC}
    files: dict[str, dict[str, Any]] = {"configmap-argocd-cm.yaml": {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": namespace, "labels": dict(ARGOCD_PART_OF),
                     "annotations": dict(annotations)},
        "data": health_checks(),
    }}
    for repo in repositories(cluster, components, pins):
        name = _secret_name(repo["url"])
        files[f"secret-{name}.yaml"] = {
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {**ARGOCD_PART_OF, REPOSITORY_LABEL: "repository"},
                         "annotations": {"argocd.argoproj.io/sync-wave": CONFIG_WAVE}},
            "stringData": repo,
        }
    return files


def is_argocd_config(obj: dict[str, Any]) -> bool:
    """An object of Argo CD's own configuration as forge ships it: labelled part-of argocd."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    return labels.get("app.kubernetes.io/part-of") == "argocd" and (
        (obj.get("kind") == "ConfigMap" and meta.get("name") == "argocd-cm")
        or (obj.get("kind") == "Secret" and labels.get(REPOSITORY_LABEL) == "repository"))


def credential_keys(obj: dict[str, Any]) -> list[str]:
    """The keys of a repository Secret that are not where-and-what (a credential in Git)."""
    keys = set((obj.get("stringData") or {})) | set((obj.get("data") or {}))
    return sorted(keys - REPOSITORY_KEYS)
