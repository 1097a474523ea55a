"""The seed's pre-train: one command trains on the whole GPU pool, 16 nodes x 8 H200 on h200
(9 x 8 A100 on a100), resuming from its last checkpoint after a pre-emption or a node failure.

    pyflyte run pretrain.py pretrain                      # locally, a few steps on CPU
    pyflyte run --remote --project training --domain production pretrain.py pretrain --steps 200000

The PyTorch plugin submits a kubeflow.org/v1 PyTorchJob (one Master, the rest Workers) that Kueue
admits as one gang. On h200 the task names the PodTemplate `forge-rdma` (the project's defaults plus
the compute fabric: an RDMA device, every rail, IPC_LOCK, /dev/shm); a100 has no RDMA fabric.

Why PyTorch and not Elastic: flytekitplugins-kfpytorch's Elastic imports torch when the task is
defined, and PyPI has no CPU-only torch wheel small enough to run this locally; the PyTorchJob Kueue
and the training-operator see differs only in its replica types (Master + Worker instead of
elastic Workers). With torch in the image, `task_config=Elastic(nnodes=16, nproc_per_node=8)` is
the one-line change.
"""
from flytekit import Resources, task, workflow
from flytekitplugins.kfpytorch import Master, PyTorch, Worker

import common

# One replica per node: the whole node's GPUs, and what the node has left for one pod.
H200_NODE = Resources(cpu="96", mem="1024Gi", gpu="8")
A100_NODE = Resources(cpu="80", mem="900Gi", gpu="8")


@task(task_config=PyTorch(master=Master(), worker=Worker(replicas=15)), resources=H200_NODE,
      pod_template_name="forge-rdma", container_image=common.IMAGE, retries=3)
def train_h200(steps_total: int, lr: float) -> dict:
    return common.train(steps_total, lr)


@task(task_config=PyTorch(master=Master(), worker=Worker(replicas=8)), resources=A100_NODE,
      container_image=common.IMAGE, retries=3)
def train_a100(steps_total: int, lr: float) -> dict:
    return common.train(steps_total, lr)


@workflow
def pretrain(steps: int = 40, lr: float = 0.2) -> dict:
    """16 nodes x 8 H200 (h200)."""
    return train_h200(steps_total=steps, lr=lr)


@workflow
def pretrain_a100(steps: int = 40, lr: float = 0.2) -> dict:
    """9 nodes x 8 A100 (a100)."""
    return train_a100(steps_total=steps, lr=lr)
