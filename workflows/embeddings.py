"""The seed's batch embeddings: plain container tasks embed the shards (one pod per shard, a map
task), then a Ray job (KubeRay's RayJob: a head and a worker group) joins them. The project's
PriorityClass, batch-preprocessing, makes all of it the first to give way to an urgent fine-tune.

    pyflyte run embeddings.py embed                       # locally (the Ray task starts a local Ray)
    pyflyte run --remote --project embeddings --domain production embeddings.py embed --shards 14
"""
import hashlib

import ray
from flytekit import Resources, map_task, task, workflow
from flytekitplugins.ray import HeadNodeConfig, RayJobConfig, WorkerNodeConfig

import common


@task(resources=Resources(cpu="64", mem="512Gi", gpu="8"), container_image=common.IMAGE, retries=2)
def embed_shard(shard: int) -> list[float]:
    """A stand-in embedding: 8 numbers per shard from its digest (the model would run here)."""
    digest = hashlib.sha256(f"shard-{shard}".encode()).digest()
    return [b / 255 for b in digest[:8]]


@ray.remote
def norm(vector: list[float]) -> float:
    return sum(x * x for x in vector) ** 0.5


@task(task_config=RayJobConfig(head_node_config=HeadNodeConfig(requests=Resources(cpu="4", mem="16Gi")),
                               worker_node_config=[WorkerNodeConfig(group_name="cpu", replicas=2,
                                                                    requests=Resources(cpu="16", mem="64Gi"))],
                               shutdown_after_job_finishes=True, ttl_seconds_after_finished=3600),
      resources=Resources(cpu="4", mem="16Gi"), container_image=common.IMAGE)
def join(vectors: list[list[float]]) -> float:
    return sum(ray.get([norm.remote(v) for v in vectors]))


@task(container_image=common.IMAGE)
def shard_ids(shards: int) -> list[int]:
    return list(range(shards))


@workflow
def embed(shards: int = 3) -> float:
    return join(vectors=map_task(embed_shard)(shard=shard_ids(shards=shards)))
