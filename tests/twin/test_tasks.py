"""Scenario jobs built from compiled tasks of workflows/ (no box needed): the job the box submits is
what propeller 1.16.8's plugins make of the task flytekit compiled."""
from __future__ import annotations

import pytest

from forge.files.datafile import DataFileError
from forge.twin.scenario import load_scenarios
from forge.twin.submit import _pytorch_job
from forge.twin.tasks import resolve
from tests.helpers import REPO


@pytest.fixture(scope="module")
def h200():
    return {s.name: s for s in resolve(REPO, load_scenarios(REPO, "h200"))}


def test_the_pretrain_is_the_compiled_pytorch_task(h200):
    job = h200["pretrain-whole-pool"].steps[0].submit[0]
    assert (job.kind, job.replicas, job.elastic, job.pod_template) == ("PyTorchJob", 16, False, "forge-rdma")
    assert job.resources == {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": "8"}
    spec = _pytorch_job({}, {"spec": {}}, job, job.replicas)["spec"]["pytorchReplicaSpecs"]
    assert {k: v["replicas"] for k, v in spec.items()} == {"Master": 1, "Worker": 15}


def test_the_fine_tune_carries_its_priority_and_the_sweeps_are_pods(h200):
    urgent = h200["urgent-finetune-preempts-batch"].steps[1].submit[0]
    assert (urgent.priority, urgent.replicas) == ("urgent-finetune", 4)
    sweep = h200["thirty-sweeps"].steps[0].submit[0]
    assert (sweep.kind, sweep.count, sweep.resources["nvidia.com/gpu"]) == ("Pod", 30, "1")


def test_an_elastic_job_keeps_the_workers_only(h200):
    job = h200["pretrain-whole-pool"].steps[0].submit[0].model_copy(update={"elastic": True})
    spec = _pytorch_job({}, {"spec": {}}, job, 16)["spec"]
    assert list(spec["pytorchReplicaSpecs"]) == ["Worker"] and spec["elasticPolicy"]["maxReplicas"] == 16


def test_a_job_with_a_task_and_its_own_resources_is_refused(tmp_path):
    folder = tmp_path / "clusters" / "h200"
    folder.mkdir(parents=True)
    (folder / "scenarios.yaml").write_text(
        "scenarios:\n  - name: s\n    steps:\n      - submit:\n"
        "          - {name: a, task: pretrain.train_h200, project: training, domain: production, resources: {cpu: '1'}}\n"
        "          - {name: b, project: training, domain: production}\n")
    with pytest.raises(DataFileError) as caught:
        load_scenarios(tmp_path, "h200")
    text = str(caught.value)
    assert "job 'a' names task pretrain.train_h200: its kind, resources, pod_template, queue and priority come from it" in text
    assert "job 'b' names no task: give `task`" in text
