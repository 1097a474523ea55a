"""No forge Application carries a destructive delete hook (forge.validate.delete_hooks): deleting
the node-feature-discovery Application must not run `nfd-master -prune` on every node."""
from __future__ import annotations

from pathlib import Path

import pytest

from forge.fleet import components_of
from forge.validate.cluster_policies import cluster_plugins
from forge.validate.delete_hooks import DeleteHooks, hook_switches
from forge.validate.engine import Report
from forge.validate.run import validate_values
from tests.helpers import CLUSTERS, REPO, chart_data, generated, model, needs_upstream


def _job(annotations: dict) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "prune", "annotations": annotations},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x:1"}]}}}}


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_the_nfd_chart_ships_without_its_post_delete_prune_hook(cluster):
    assert generated(f"overlays/{cluster}/node-feature-discovery/values.yaml")["postDeleteCleanup"] is False


def test_a_delete_hook_object_fails_in_any_application():
    report = Report()
    objects = [_job({"helm.sh/hook": "post-delete", "helm.sh/hook-delete-policy": "hook-succeeded"}),
               _job({"argocd.argoproj.io/hook": "PreDelete"}),
               _job({"helm.sh/hook": "pre-install,pre-upgrade"})]  # not a delete hook
    DeleteHooks()(report, "h200", "node-feature-discovery", objects)
    assert [f.reason.split(":")[0] for f in report.failures] == ["a post-delete hook", "a PreDelete hook"]
    assert all("Application node-feature-discovery is deleted" in f.reason for f in report.failures)
    # and forge validate runs it on every cluster's output
    assert any(isinstance(p, DeleteHooks) for p in cluster_plugins({}, {}, [], {}))


@needs_upstream
def test_the_chart_default_post_delete_cleanup_is_refused(upstream: Path):
    data = chart_data(upstream, "node-feature-discovery")
    shipped = generated("overlays/h200/node-feature-discovery/values.yaml")
    assert hook_switches(shipped, data) == []
    [(path, reason)] = hook_switches({k: v for k, v in shipped.items() if k != "postDeleteCleanup"}, data)
    assert path == "postDeleteCleanup" and "nfd-master -prune" in reason and "set it to false" in reason
    # gpu-operator's CRD cleanup hook is a switch too (off by default, as shipped)
    gpu = chart_data(upstream, "gpu-operator")
    assert hook_switches(generated("overlays/h200/gpu-operator/values.yaml"), gpu) == []
    assert [p for p, _ in hook_switches({"operator": {"cleanupCRD": True}}, gpu)] == ["operator.cleanupCRD"]


@needs_upstream
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_forge_validate_finds_no_delete_hook_switch_in_the_shipped_values(cluster, upstream: Path):
    report = Report()
    cluster_model = model(cluster)
    validate_values(REPO, cluster_model, components_of(cluster_model), upstream, report)
    assert [f for f in report.failures if "delete hook" in f.reason] == []


def _cleanup_gpucluster() -> dict:
    # As gpu-operator v26.7.0 renders it with our values (templates/cleanup_gpucluster.yaml: no condition).
    job = _job({"helm.sh/hook": "pre-delete", "helm.sh/hook-weight": "0",
                "helm.sh/hook-delete-policy": "hook-succeeded,before-hook-creation"})
    job["metadata"].update(name="gpu-operator-cleanup-gpucluster", namespace="gpu-operator")
    return job


def test_the_gpu_operators_unconditional_cleanup_hook_is_a_warning_while_no_gpucluster_is_deployed():
    report = Report()
    DeleteHooks()(report, "h200", "gpu-operator", [_cleanup_gpucluster()])
    assert report.failures == []
    [warning] = report.warnings
    assert warning.reason.startswith("reviewed pre-delete hook: the pinned gpu-operator chart renders this pre-delete Job unconditionally")
    # a GPUCluster in the same Application: the hook would delete it, a failure again
    gpucluster = {"apiVersion": "nvidia.com/v1alpha1", "kind": "GPUCluster", "metadata": {"name": "cluster"}}
    report = Report()
    DeleteHooks()(report, "h200", "gpu-operator", [_cleanup_gpucluster(), gpucluster])
    assert [f.reason.split(":")[0] for f in report.failures] == ["a pre-delete hook"]
