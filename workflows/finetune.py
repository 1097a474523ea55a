"""The seed's urgent fine-tune: 4 nodes that pre-empt default training and batch work when the
cluster is full, resuming from the last checkpoint if it is itself interrupted.

    pyflyte run finetune.py finetune                      # locally
    pyflyte run --remote --project finetune --domain production finetune.py finetune

Its priority: the label kueue.x-k8s.io/priority-class names the WorkloadPriorityClass
`urgent-finetune` (Kueue orders and pre-empts by it); the pods run at the PriorityClass of the same
name, from the project's PodTemplate (the finetune project's class).
"""
from flytekit import Resources, task, workflow
from flytekitplugins.kfpytorch import Master, PyTorch, Worker

import common

URGENT = {common.PRIORITY: "urgent-finetune"}


@task(task_config=PyTorch(master=Master(), worker=Worker(replicas=3)), resources=Resources(cpu="96", mem="1024Gi", gpu="8"),
      pod_template_name="forge-rdma", labels=URGENT, container_image=common.IMAGE, retries=3)
def tune_h200(steps_total: int, lr: float) -> dict:
    return common.train(steps_total, lr, seed=1)


@task(task_config=PyTorch(master=Master(), worker=Worker(replicas=3)), resources=Resources(cpu="80", mem="900Gi", gpu="8"),
      labels=URGENT, container_image=common.IMAGE, retries=3)
def tune_a100(steps_total: int, lr: float) -> dict:
    return common.train(steps_total, lr, seed=1)


@workflow
def finetune(steps: int = 20, lr: float = 0.2) -> dict:
    """4 nodes x 8 H200 (h200)."""
    return tune_h200(steps_total=steps, lr=lr)


@workflow
def finetune_a100(steps: int = 20, lr: float = 0.2) -> dict:
    """4 nodes x 8 A100 (a100)."""
    return tune_a100(steps_total=steps, lr=lr)
