"""The root Application's PreSync hook: a Job that checks what must exist before the first sync
(forge.pod_scripts.prereq_check) and fails with one line per missing prerequisite, so the root syncs nothing
until the cluster can take it, and retries until it can (forge.argocd.order).

Its ServiceAccount, RBAC and ConfigMap are PreSync hooks too (weight -1, before the Job): hooks run
before every other object of the sync. The RBAC reads only what the check needs: DaemonSets (to
find the CNI), the StorageClasses and IngressClasses by name, the bootstrap Secret by name (the
API groups it reads through discovery, open to every account by default: system:discovery).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from forge.facts import kube_apis, versions

from forge.pod_scripts import prereq_check
from forge.components.base import Component
from forge.components import network
from forge.components.external_secrets import ACCESS_KEY_KEYS, ExternalSecrets, external_secrets_for
from forge.model.cluster import ClusterModel

NAME = "forge-prerequisites"
PREREQ_DIR = "prerequisites"  # clusters/<cluster>/argocd/prerequisites/
# DaemonSets of CNIs that enforce NetworkPolicy, as their upstream manifests name them.
ENFORCING_CNI = ("calico-node", "cilium", "antrea-agent", "kube-router", "canal", "weave-net", "kube-ovn-cni", "ovnkube-node")
_HOOK = "argocd.argoproj.io/hook"


def _walk(value: Any, keys: frozenset[str]) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k in keys and isinstance(v, str) and v:
                yield v
            else:
                yield from _walk(v, keys)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, keys)


def prerequisites(cluster: ClusterModel, components: list[Component]) -> dict[str, Any]:
    """The cluster's prerequisites, as forge.pod_scripts.prereq_check reads them: from what the components'
    values and manifests name (a StorageClass, an IngressClass) and the bootstrap Secret."""
    named: dict[str, set[str]] = {"storage": set(), "ingress": set()}
    for c in components:
        for tree in (c.values(cluster), c.manifests(cluster), *c.extra_releases(cluster).values()):
            named["storage"] |= set(_walk(tree, frozenset({"storageClassName", "storageClass"})))
            named["ingress"] |= set(_walk(tree, frozenset({"ingressClassName"})))
    secrets = []
    eso = next((c for c in components if isinstance(c, ExternalSecrets)), None)
    if eso and (boot := eso.bootstrap_secret(cluster)):
        secrets.append({"namespace": boot[0], "name": boot[1], "keys": list(ACCESS_KEY_KEYS)})
    return {"cni": list(ENFORCING_CNI), "storage_classes": sorted(named["storage"]),
            "ingress_classes": sorted(named["ingress"]), "secrets": secrets, "apis": built_in_apis(cluster, components),
            **eks_cni(cluster)}


def built_in_apis(cluster: ClusterModel, components: list[Component]) -> dict[str, list[str]]:
    """{group/version: kinds} of every object forge writes for the cluster whose group the API
    server builds in (forge.facts.kube_apis): a CRD's group comes with the sync itself. Charts' objects
    are Argo CD's to render; forge validate checks those against cluster.served."""
    found: dict[str, set[str]] = {}
    for c in components:
        own = [*c.fleet_manifests(cluster, components), *external_secrets_for(cluster, c),
               *network.policies(c, cluster, components)]  # as forge.generate.tree writes them
        for obj in own:
            api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
            if kube_apis.built_in(cluster.kubernetes_version, api_version):
                found.setdefault(api_version, set()).add(kind)
    return {gv: sorted(kinds) for gv, kinds in sorted(found.items())}


def eks_cni(cluster: ClusterModel) -> dict[str, Any]:
    """An EKS cluster's CNI is the VPC CNI, which enforces NetworkPolicy through its agent (forge.pod_scripts.prereq_check)."""
    return {"eks_vpc_cni": True} if cluster.cloud is not None and cluster.cloud.provider == "aws" else {}


def _meta(cluster: ClusterModel, name: str, weight: str, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "annotations": {
        _HOOK: "PreSync", "argocd.argoproj.io/hook-weight": weight,
        "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation"}}
    if namespaced:
        meta["namespace"] = cluster.settings.argocd.namespace
    return meta


def _rules(spec: dict[str, Any]) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = [{"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["list"]}]
    if spec["storage_classes"]:
        rules.append({"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["get"],
                      "resourceNames": spec["storage_classes"]})
    if spec["ingress_classes"]:
        rules.append({"apiGroups": ["networking.k8s.io"], "resources": ["ingressclasses"], "verbs": ["get"],
                      "resourceNames": spec["ingress_classes"]})
    if spec["secrets"]:
        rules.append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                      "resourceNames": sorted({s["name"] for s in spec["secrets"]})})
    return rules


def _job(cluster: ClusterModel) -> dict[str, Any]:
    container = {
        "name": "check", "image": versions.image("prerequisites-check").ref,
        "command": ["python3", "/etc/forge/check.py", "/etc/forge/prerequisites.json"],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "check", "mountPath": "/etc/forge", "readOnly": True}],
    }
    pod = {
        "serviceAccountName": NAME, "restartPolicy": "Never",
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "nodeSelector": cluster.system_node_selector, "tolerations": cluster.system_tolerations,
        "containers": [container],
        "volumes": [{"name": "check", "configMap": {"name": NAME}}],
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(cluster, NAME, "0"),
            "spec": {"backoffLimit": 0, "activeDeadlineSeconds": 300, "template": {"spec": pod}}}


def prerequisite_objects(cluster: ClusterModel, components: list[Component]) -> dict[str, dict[str, Any]]:
    """File name inside prerequisites/ -> object."""
    spec = prerequisites(cluster, components)
    subject = {"kind": "ServiceAccount", "name": NAME, "namespace": cluster.settings.argocd.namespace}
    return {
        "serviceaccount.yaml": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(cluster, NAME, "-1")},
        "configmap.yaml": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(cluster, NAME, "-1"),
                           "data": {"check.py": Path(prereq_check.__file__).read_text(encoding="utf-8"),
                                    "prerequisites.json": json.dumps(spec, indent=2, sort_keys=True) + "\n"}},
        "clusterrole.yaml": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                             "metadata": _meta(cluster, f"{NAME}-{cluster.name}", "-1", namespaced=False), "rules": _rules(spec)},
        "clusterrolebinding.yaml": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                                    "metadata": _meta(cluster, f"{NAME}-{cluster.name}", "-1", namespaced=False),
                                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                "name": f"{NAME}-{cluster.name}"},
                                    "subjects": [subject]},
        "job.yaml": _job(cluster),
    }
