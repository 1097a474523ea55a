"""Issue 21 item 10: every infrastructure pod gets an infrastructure priority. Loki's memcached
caches through their own chart values; pods no chart value reaches (Alluxio's, the network
operator's and the DaemonSets it creates) through forge's MutatingAdmissionPolicy."""
from __future__ import annotations

import pytest

from forge.components import infra_priority
from forge.validate.cluster_policies import PriorityFloor, mutated_namespaces
from tests.helpers import CLUSTERS, generated


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_loki_caches_name_a_system_class(cluster):
    v = generated(f"overlays/{cluster}/loki/values.yaml")
    for cache in ("chunksCache", "resultsCache"):
        assert v[cache]["priorityClassName"] == "system-cluster-critical"


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_the_admission_policy_covers_every_namespace_of_a_chart_without_a_class_value(cluster):
    folder = f"overlays/{cluster}/scheduling"
    policy = generated(f"{folder}/mutatingadmissionpolicy-{infra_priority.POLICY}.yaml")
    binding = generated(f"{folder}/mutatingadmissionpolicybinding-{infra_priority.POLICY}.yaml")
    assert policy["apiVersion"] == binding["apiVersion"] == "admissionregistration.k8s.io/v1beta1"
    namespaces = mutated_namespaces([policy, binding])
    assert "alluxio" in namespaces
    assert ("nvidia-network-operator" in namespaces) is (cluster == "h200")  # the fabric cluster runs the network operator
    # only pods that name no class, or the global default the Priority plugin filled in, are changed
    [condition] = policy["spec"]["matchConditions"]
    assert condition["expression"].endswith("object.spec.priorityClassName == 'default-training'")
    expr = policy["spec"]["mutations"][0]["applyConfiguration"]["expression"]
    assert expr.count("{") == expr.count("}")
    for piece in ("'system-node-critical'", "'system-cluster-critical'", "2000001000", "2000000000", "preemptionPolicy"):
        assert piece in expr


def test_the_priority_floor_accepts_classless_pods_only_where_the_policy_binds():
    daemonset = {"kind": "DaemonSet", "metadata": {"name": "alluxio-worker", "namespace": "alluxio"},
                 "spec": {"template": {"spec": {"containers": [{"name": "w", "image": "x"}]}}}}
    floor = PriorityFloor({"default-training": 10000}, frozenset({"alluxio"}))
    assert floor.problem(daemonset, "alluxio")[1].startswith("no priorityClassName in infrastructure namespace 'alluxio'")
    covered = PriorityFloor({"default-training": 10000}, frozenset({"alluxio"}), mutated=mutated_namespaces(
        infra_priority.objects(["alluxio"], "default-training")))
    assert covered.problem(daemonset, "alluxio") is None
    # a binding without its policy covers nothing
    assert mutated_namespaces([infra_priority.binding(["alluxio"])]) == frozenset()


@pytest.mark.parametrize("cluster", ["h200"])  # h200-burst's hubs too, but EKS serves no such policy (test_api_served.py)
def test_jupyterhub_pods_get_a_system_class_from_the_policy_and_no_placeholders(cluster):
    # The jupyterhub chart 4.4.0 can name only PriorityClasses it creates itself: its hub and
    # proxy named none in the real chart's hydrated output (6 failures per hub pair before).
    folder = f"overlays/{cluster}/scheduling"
    policy = generated(f"{folder}/mutatingadmissionpolicy-{infra_priority.POLICY}.yaml")
    binding = generated(f"{folder}/mutatingadmissionpolicybinding-{infra_priority.POLICY}.yaml")
    assert "jupyterhub" in mutated_namespaces([policy, binding])
    # placeholders would reserve nothing (user servers run in the project namespaces) and would
    # get the infrastructure class from the policy: none rendered
    v = generated(f"overlays/{cluster}/jupyterhub/values.yaml")
    assert v["scheduling"]["userPlaceholder"] == {"enabled": False}
    assert v["scheduling"]["podPriority"] == {"enabled": False}


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_the_gpu_operators_hook_jobs_get_a_system_class_from_the_policy(cluster):
    # gpu-operator v26.7.0's hook Jobs (upgrade-crd, cleanup-gpucluster) name no class and no value
    # reaches them: 2 failures per cluster in the real chart's hydrated output before.
    folder = f"overlays/{cluster}/scheduling"
    policy = generated(f"{folder}/mutatingadmissionpolicy-{infra_priority.POLICY}.yaml")
    binding = generated(f"{folder}/mutatingadmissionpolicybinding-{infra_priority.POLICY}.yaml")
    assert "gpu-operator" in mutated_namespaces([policy, binding])
