"""What a scenario step does besides submitting jobs (docs/twin.md "Scenarios"): the fleet's
normal day goes on around it. Schema only; forge.twin.day carries them out.

    - finish: [reranker, sweep]          # these jobs end (their tasks complete) before the step
      node_down: {runs: embed}           # a GPU node stops reporting Ready
      node_test: {name: nccl, peer_runs: reranker}   # forge's NCCL test of a free node whose peer runs a rank

A job submitted by an earlier step keeps running across later steps until the step that
finishes it (or the scenario's end).
"""
from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

Name = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=40)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NodeTest(_Strict):
    """forge's own NCCL node-test Job (overlays/<cluster>/gpu-operator/node-tests/nccl-<node>.yaml,
    the Service and Job as the operator applies them) for a node that runs no pod of the
    scenario and whose test peer runs a pod of `peer_runs`."""

    name: Name  # how expectations name the test
    peer_runs: Name  # a job of an earlier step


class NodeDown(_Strict):
    """One GPU node stops reporting Ready, as a node whose kubelet died: the box's kwok stops
    managing it (no more heartbeats) and its Ready condition turns False; the node lifecycle
    controller then taints it and marks its pods not ready. Back up when the scenario ends."""

    runs: Name | None = None  # a node running a pod of this job; default: a whole-GPU node with no pod of the scenario
