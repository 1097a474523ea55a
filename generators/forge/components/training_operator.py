"""Kubeflow training-operator v1: the PyTorchJob and MPIJob controllers behind Flyte's PyTorch and
MPI plugins.

Upstream publishes no Helm chart for v1, only kustomize manifests; the Application builds
`manifests/overlays/standalone` of kubeflow/trainer (the repository's current name; it was
kubeflow/training-operator) at the pinned tag, patched by Argo CD (RemoteBase). The standalone
overlay pins the operator image itself, so the tag pins the image too (both in charts/versions.yaml:
`sources.training-operator` and `images.training-operator`).

Our patches: the Deployment runs on the control plane with the system-cluster-critical class, and
the upstream Namespace is dropped because base/training-operator/ ships `kubeflow` with its Pod
Security level and the no-prune annotation (two copies of one object in one Application fight);
every upstream CRD gets `Prune=false`, so Argo CD never prunes one automatically while it still
prunes the rest.
The operator writes its own webhook certificate into a Secret and the webhook configuration at
runtime: Argo CD is told to leave those fields alone, or self-heal would wipe them every sync.
"""
from __future__ import annotations

import yaml

from forge.components import network
from forge.components.base import RBAC_NAMESPACED, WORKLOAD_KINDS, WAVE_OPERATORS, Component, Expected, RemoteBase
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL
from forge.model.cluster import ClusterModel
from forge.facts import versions

SOURCE = "training-operator"  # sources in charts/versions.yaml: repository, tag and overlay path
NAMESPACE = "kubeflow"  # set by the upstream overlay (`namespace: kubeflow`); not ours to choose
WEBHOOK_SECRET = "training-operator-webhook-cert"
WEBHOOK_CONFIG = "validator.training-operator.kubeflow.org"
DEPLOYMENT = "training-operator"
# Argo CD's per-object sync option: never pruned automatically (a CRD leaving the tag would
# otherwise delete every PyTorchJob and MPIJob of the cluster).
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
NO_PRUNE = "Prune=false"
IMAGE = "training-operator"  # images in charts/versions.yaml: what the overlay pins at the source's tag
METRICS_PORT = 8080  # the upstream Deployment's --metrics-bind-address
WEBHOOK_PORT = 9443  # the upstream Deployment's webhook server (its Service's targetPort)


class TrainingOperator(Component):
    name = "training-operator"
    namespace = NAMESPACE
    sync_wave = WAVE_OPERATORS  # before Flyte, whose plugins create PyTorchJobs and MPIJobs
    namespaced_kinds = (*WORKLOAD_KINDS, ("", "Secret"))  # the standalone overlay: manager, webhook Service, cert Secret
    api_groups = ('kubeflow.org',)
    server_side_apply = True  # the job CRDs embed pod templates: too large for client-side apply
    cluster_kinds = (
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    )
    ignore_differences = (
        {"group": "", "kind": "Secret", "name": WEBHOOK_SECRET, "namespace": NAMESPACE, "jsonPointers": ["/data"]},
        {"group": "admissionregistration.k8s.io", "kind": "ValidatingWebhookConfiguration", "name": WEBHOOK_CONFIG,
         "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},
    )

    def enabled(self, cluster: ClusterModel) -> bool:
        return bool(cluster.gpu_nodes)

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        return (network.scrape([METRICS_PORT]), network.webhook([WEBHOOK_PORT]))

    def remote_base(self, cluster: ClusterModel) -> RemoteBase:
        return upstream_manifests(cluster)

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        """Our patches took: the upstream Deployment as `forge hydrate` builds the remote base
        (the kubeflow Namespace that remains is base/training-operator's)."""
        pod = ("spec", "template", "spec")
        deployment = ("Deployment", DEPLOYMENT)
        return [
            Expected(*deployment, (*pod, "priorityClassName"), SYSTEM_CLUSTER_CRITICAL),
            Expected(*deployment, (*pod, "nodeSelector"), cluster.system_node_selector),
            Expected(*deployment, (*pod, "tolerations"), cluster.system_tolerations),
            Expected(*deployment, (*pod, "containers", f"name={DEPLOYMENT}", "image"), versions.image(IMAGE).ref),
            Expected("Namespace", NAMESPACE, ("metadata", "labels", "pod-security.kubernetes.io/enforce"), "baseline"),
        ]


def upstream_manifests(cluster: ClusterModel) -> RemoteBase:
    deployment_patch = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT},
        "spec": {"template": {"spec": {
            "priorityClassName": SYSTEM_CLUSTER_CRITICAL,
            "nodeSelector": cluster.system_node_selector,
            "tolerations": cluster.system_tolerations,
        }}},
    }
    drop_namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}, "$patch": "delete"}
    # Every CRD of the tag (a target by kind: the patch's name is replaced by each match's).
    keep_crds = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                 "metadata": {"name": "any", "annotations": {SYNC_OPTIONS: NO_PRUNE}}}
    return RemoteBase(
        repo_url=versions.source(SOURCE).repo,
        revision=versions.source(SOURCE).ref,
        path=versions.source(SOURCE).path,
        patches=(
            {"target": {"kind": "Deployment", "name": DEPLOYMENT}, "patch": yaml.safe_dump(deployment_patch, sort_keys=False)},
            {"target": {"kind": "Namespace", "name": NAMESPACE}, "patch": yaml.safe_dump(drop_namespace, sort_keys=False)},
            {"target": {"kind": "CustomResourceDefinition"}, "patch": yaml.safe_dump(keep_crds, sort_keys=False)},
        ),
    )
