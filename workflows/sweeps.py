"""The seed's 30 sweeps: one hyper-parameter per copy of a one-GPU task, all at once, no manual GPU
juggling (a map task: Flyte's ArrayNode starts one pod per input; Kueue admits what the project's
queue and what the cohort lends allow, and queues the rest).

    pyflyte run sweeps.py sweep                           # locally, 30 tiny runs on CPU
    pyflyte run --remote --project training --domain development sweeps.py sweep
"""
from flytekit import Resources, map_task, task, workflow

import common


@task(resources=Resources(cpu="8", mem="64Gi", gpu="1"), container_image=common.IMAGE, retries=2)
def trial(lr: float) -> float:
    return common.train(10, lr)["loss"]


@task(container_image=common.IMAGE)
def best(lrs: list[float], losses: list[float]) -> float:
    return min(zip(losses, lrs))[1]


@workflow
def sweep(count: int = 30) -> float:
    lrs = learning_rates(count=count)
    return best(lrs=lrs, losses=map_task(trial)(lr=lrs))


@task(container_image=common.IMAGE)
def learning_rates(count: int) -> list[float]:
    return [round(0.01 * (i + 1), 4) for i in range(count)]
