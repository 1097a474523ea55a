"""The training step every example shares: plain Python, no torch (PyPI has no CPU-only PyTorch
wheel small enough for a laptop or CI; in the cluster's image the same loop would be a torch model).

A least-squares fit of y = w*x + b by gradient descent on a small synthetic set. What matters here is
not the model but the shape of a real job: steps, a loss, a checkpoint written every few steps with
flytekit's checkpointing (Flyte keeps it in S3 and hands it to the next attempt after a pre-emption or
a retry), and a resume from it.
"""
from __future__ import annotations

import json
import random

import flytekit


def data(seed: int, n: int = 64) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    return [(x, 3.0 * x + 0.5 + rng.gauss(0, 0.01)) for x in (rng.uniform(-1, 1) for _ in range(n))]


def resume() -> dict:
    """The previous attempt's checkpoint (flytekit's checkpointing: on Flyte, the prior attempt's
    checkpoint in S3), else a fresh start."""
    saved = flytekit.current_context().checkpoint.read()
    return json.loads(saved) if saved else {"step": 0, "w": 0.0, "b": 0.0}


def save(state: dict) -> None:
    flytekit.current_context().checkpoint.write(json.dumps(state, sort_keys=True).encode())


def train(steps: int, lr: float, seed: int = 0, checkpoint_every: int = 10) -> dict:
    """Train for `steps` steps from the last checkpoint; returns the final state with its loss."""
    points, state = data(seed), resume()
    while state["step"] < steps:
        gw = sum(2 * (state["w"] * x + state["b"] - y) * x for x, y in points) / len(points)
        gb = sum(2 * (state["w"] * x + state["b"] - y) for x, y in points) / len(points)
        state = {"step": state["step"] + 1, "w": state["w"] - lr * gw, "b": state["b"] - lr * gb}
        if state["step"] % checkpoint_every == 0 or state["step"] == steps:
            save(state)
    loss = sum((state["w"] * x + state["b"] - y) ** 2 for x, y in points) / len(points)
    return {**state, "loss": loss}


# The image every example runs in: flytekit's own image at the SDK version of requirements.lock,
# pinned in charts/versions.yaml (images.flytekit; `forge workflows check` refuses any other). A real
# pre-train builds its own image with torch on top of it (flytekit.ImageSpec) and pins that instead.
IMAGE = "cr.flyte.org/flyteorg/flytekit:py3.11-1.16.31"

# Kueue's labels, which propeller copies from @task(labels=...) onto the object it creates (the Pod,
# the PyTorchJob, the RayJob): the LocalQueue (forge's default label names `default`) and the
# WorkloadPriorityClass (without one, Kueue takes the pods' PriorityClass: the project's).
QUEUE = "kueue.x-k8s.io/queue-name"
PRIORITY = "kueue.x-k8s.io/priority-class"
