"""PriorityClasses from the inventory: pre-emption set so urgent work pre-empts batch, system
classes for operators, and rejections (message and file:line)."""
from __future__ import annotations

import pytest
from tests.helpers import edit, generated, inventory_text, line_of, only_problem, problems_of, rendered


def classes(cluster: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in rendered(cluster, "scheduling") if o["kind"] == "PriorityClass"}


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_urgent_preempts_batch_and_batch_preempts_nobody(cluster):
    pcs = classes(cluster)
    node_test = pcs.pop("forge-node-test")  # the node tests' own class: above the workloads, pre-empts nobody
    assert node_test["preemptionPolicy"] == "Never" and node_test["value"] > max(pc["value"] for pc in pcs.values())
    assert set(pcs) == {"urgent-finetune", "interactive", "default-training", "batch-preprocessing"}
    urgent, batch = pcs["urgent-finetune"], pcs["batch-preprocessing"]
    assert urgent["preemptionPolicy"] == "PreemptLowerPriority" and urgent["value"] > batch["value"]
    assert batch["preemptionPolicy"] == "Never"
    assert batch["value"] == min(pc["value"] for pc in pcs.values())  # anything may pre-empt it
    assert pcs["interactive"]["preemptionPolicy"] == "Never"  # queues ahead of training, evicts none
    assert pcs["default-training"]["value"] > batch["value"] and pcs["default-training"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert [n for n, pc in pcs.items() if pc["globalDefault"]] == ["default-training"]
    assert all(pc["value"] <= 1_000_000_000 for pc in pcs.values())  # below the system classes


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_operators_use_system_priority_classes(cluster):
    assert generated(f"overlays/{cluster}/kuberay-operator/values.yaml")["priorityClassName"] == "system-cluster-critical"
    assert generated(f"overlays/{cluster}/flyte/values.yaml")["deployment"]["extraPodSpec"]["priorityClassName"] == "system-cluster-critical"
    app = generated(f"clusters/{cluster}/argocd/apps/application-training-operator.yaml")
    patch = app["spec"]["sources"][0]["kustomize"]["patches"][0]["patch"]
    assert "priorityClassName: system-cluster-critical" in patch


def test_rejects_a_class_defined_twice():
    text = edit(inventory_text("h200"), "- {name: interactive, value: 50000", "- {name: urgent-finetune, value: 50000")
    p = only_problem(problems_of("h200", text), "components.scheduling.priority_classes[1].name")
    assert p.message == f"priority class 'urgent-finetune' defined twice (first at line {line_of(text, 'name: urgent-finetune', nth=1)})"
    assert p.line == line_of(text, "name: urgent-finetune", nth=2)


def test_rejects_two_global_defaults():
    text = edit(inventory_text("a100"), "preemption: Never, description: \"Interactive",
                "preemption: Never, global_default: true, description: \"Interactive")
    problems = problems_of("a100", text)
    p = only_problem(problems, "components.scheduling.priority_classes[2].global_default")
    assert p.message == "only one class may be the global default; 'interactive' already is"
    assert p.line == line_of(text, "name: default-training")


def test_rejects_the_system_prefix():
    text = edit(inventory_text("h200"), "{name: batch-preprocessing,", "{name: system-batch,")
    problems = problems_of("h200", text)
    p = only_problem(problems, "components.scheduling.priority_classes[3].name")
    assert p.message == "'system-batch': the 'system-' prefix is reserved for Kubernetes' own classes"
    assert p.line == line_of(text, "system-batch")
    # Flyte's projects naming the old class are reported too, each at its own line.
    assert only_problem(problems, "components.flyte.projects[2].priority_class").line == line_of(text, "priority_class: batch-preprocessing")


def test_rejects_a_workload_class_at_the_node_tests_rank():
    """The node tests' class (forge-node-test, 1000000000) must rank above every workload class: a
    class of that name or value is refused at its line."""
    text = edit(inventory_text("h200"), "{name: urgent-finetune, value: 100000,", "{name: urgent-finetune, value: 1000000000,")
    p = only_problem(problems_of("h200", text), "components.scheduling.priority_classes[0].value")
    assert p.message.startswith("'urgent-finetune' (1000000000): the name forge-node-test and the value 1000000000 are the node tests' class")
    assert p.line == line_of(text, "name: urgent-finetune")
