"""Every task pod reaches S3 at its own cluster's storage endpoint, with no admission mutation.

A task sent to the cloud through MultiKueue (docs/burst.md) is created on the worker from the pod
spec the manager's Flyte wrote. Had that spec named the endpoint as a value (Flyte's k8s plugin
default-env-vars), it would name the manager's: Alluxio's S3 proxy on premises, which the cloud
cluster neither runs nor reaches, and the task would fail its first read. So Flyte names no value:
its k8s plugin gives every task container `envFrom` this ConfigMap (default-env-from-configmaps),
and every project namespace of every cluster has one with FLYTE_AWS_ENDPOINT set to that cluster's
endpoint (Alluxio where it caches, S3 in the buckets' region in a cloud). The kubelet resolves it
on the cluster the pod runs on: the same spec reads Alluxio on premises and S3 in the cloud.

A mutation would need a MutatingAdmissionPolicy, which EKS does not serve (forge.facts.kube_apis;
docs/security.md). A task that sets the variable itself keeps its value (env wins over envFrom).
"""
from __future__ import annotations

from typing import Any, Iterable

CONFIGMAP = "forge-storage-endpoint"
VARIABLE = "FLYTE_AWS_ENDPOINT"


def configmap(namespace: str, endpoint: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIGMAP, "namespace": namespace},
            "data": {VARIABLE: endpoint}}


def objects(namespaces: Iterable[str], endpoint: str) -> list[dict[str, Any]]:
    """One ConfigMap per project namespace, naming this cluster's endpoint."""
    return [configmap(ns, endpoint) for ns in namespaces]
