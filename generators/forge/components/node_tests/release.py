"""The release of a tested node: a Job that waits for the node's test Jobs and, once every one
passed, removes the untested taint (forge.pod_scripts.node_release, standard library, in a ConfigMap).

Least privilege, per node: its own ServiceAccount, a Role that may only `get` that node's test
Jobs (resourceNames) and a ClusterRole that may only `get` and `patch` that one node
(resourceNames). RBAC cannot narrow a patch to one field, so the script sends a JSON patch of the
taints alone, guarded by the node's resourceVersion. It runs on the system nodes, never on the node
it releases. The alternative, an operator running `kubectl taint node <node> forge.exa.ai/untested-`,
is the documented fallback (docs/day-two.md) but leaves the node out when nobody is watching.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from forge.facts import versions

from forge.pod_scripts import node_release
from forge.components.node_tests.base import NODE_LABEL, TEST_LABEL, job, job_name
from forge.model.cluster import UNTESTED_TAINT_KEY, ClusterModel, NodeModel

TEST = "release"
SCRIPT = "forge-node-release"  # the ConfigMap with forge.pod_scripts.node_release
IMAGE = "prerequisites-check"  # images in charts/versions.yaml: the pinned Python image
TIMEOUT_SECONDS = 6 * 3600  # past the NCCL Job's deadline (nccl.DEADLINE_SECONDS), which covers the DCGM run
RBAC = "rbac.authorization.k8s.io"


def name(node: NodeModel) -> str:
    return f"forge-node-release-{node.name}"


def script(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": SCRIPT, "namespace": namespace},
            "data": {"release.py": Path(node_release.__file__).read_text(encoding="utf-8")}}


def _rbac(node: NodeModel, namespace: str, jobs: list[str]) -> list[dict[str, Any]]:
    sa = name(node)
    subject = [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": namespace}},
        {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": sa, "namespace": namespace},
         "rules": [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"], "resourceNames": jobs}]},
        {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": {"name": sa, "namespace": namespace},
         "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": sa}, "subjects": subject},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": sa},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"], "resourceNames": [node.name]}]},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": sa},
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": sa}, "subjects": subject},
    ]


def release_objects(cluster: ClusterModel, node: NodeModel, namespace: str, tests: list[str]) -> list[dict[str, Any]]:
    """The node's RBAC and release Job, waiting for `tests` (names of its test Jobs)."""
    jobs = [job_name(t, node) for t in tests]
    container = {
        "name": "release", "image": versions.image(IMAGE).ref,
        "command": ["python3", "/etc/forge/release.py", node.name, UNTESTED_TAINT_KEY, namespace, *jobs,
                    f"--timeout={TIMEOUT_SECONDS}"],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "script", "mountPath": "/etc/forge", "readOnly": True}],
    }
    pod = {
        "serviceAccountName": name(node),
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "nodeSelector": cluster.system_node_selector, "tolerations": cluster.system_tolerations,
        "containers": [container],
        "volumes": [{"name": "script", "configMap": {"name": SCRIPT}}],
    }
    labels = {TEST_LABEL: TEST, NODE_LABEL: node.name}
    released = job(name(node), namespace, labels, {"activeDeadlineSeconds": TIMEOUT_SECONDS + 600}, pod)
    return [*_rbac(node, namespace, jobs), released]
