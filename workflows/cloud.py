"""A job for the cloud: the same training task on the project's `cloud` queue, which MultiKueue
sends to h200-burst (EKS, H200 spot nodes with EFA); checkpoints go to S3 as on premises, so a spot
node taken back costs the steps since the last one.

    pyflyte run cloud.py cloud_train                      # locally
    pyflyte run --remote --project training --domain production cloud.py cloud_train

The label kueue.x-k8s.io/queue-name: cloud picks the queue (forge's default label names `default`,
the on-premises one). Multi-node training on the cloud asks for the node's EFA interfaces as it
asks for GPUs (vpc.amazonaws.com/efa, from the task's pod template: flytekit's Resources have no
field for an extended resource); h200's rails policy lets a job on the cloud queue through without
the on-premises fabric.
"""
from flytekit import PodTemplate, task, workflow
from flytekitplugins.kfpytorch import Master, PyTorch, Worker
from kubernetes.client import V1Container, V1PodSpec, V1ResourceRequirements

import common

# One node's worth per replica, with every EFA interface of a p5en.48xlarge. All of it in the pod
# template: flytekit replaces the primary container's resources with the task's `resources=` when
# a task has any, so a task that needs an extended resource states them all here.
NODE = {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}


@task(task_config=PyTorch(master=Master(), worker=Worker(replicas=3)),
      labels={common.QUEUE: "cloud"}, container_image=common.IMAGE, retries=5,
      pod_template=PodTemplate(primary_container_name="pytorch", pod_spec=V1PodSpec(containers=[
          V1Container(name="pytorch", resources=V1ResourceRequirements(requests=NODE, limits=NODE))])))
def train_in_cloud(steps_total: int, lr: float) -> dict:
    return common.train(steps_total, lr, seed=2)


@workflow
def cloud_train(steps: int = 20, lr: float = 0.2) -> dict:
    """4 nodes x 8 H200 on h200-burst, through h200's cloud queue."""
    return train_in_cloud(steps_total=steps, lr=lr)
