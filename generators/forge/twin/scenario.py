"""The seed's workloads as data: `clusters/<cluster>/scenarios.yaml` (docs/twin.md documents it).

A scenario is a list of steps; a step submits jobs, then waits (up to `within` seconds) until
every one of its expectations holds, and fails naming the first that does not, with what the
controllers said (the Workload's conditions, the pods' state). Jobs are submitted the way Flyte's
propeller would (forge.twin.submit): in `<project>-<domain>`, from the project's PodTemplate,
with propeller's default labels, tolerations, environment and resources from forge's values.

    scenarios:
      - name: pretrain-whole-pool
        description: a 7B pre-train on every node of the largest whole-GPU pool
        steps:
          - submit:
              - {name: pretrain, kind: PyTorchJob, project: training, domain: production,
                 replicas: whole-pool, resources: {nvidia.com/gpu: 8, cpu: 96, memory: 1024Gi}}
            expect:
              - {job: pretrain, admitted: all, distinct_nodes: whole-pool}

`replicas`/`distinct_nodes: whole-pool` is the number of nodes of the largest pool (Kueue flavor)
whose allocatable holds one replica's `resources`: the scenario keeps its meaning when nodes are
added. `count: N` submits N copies of a job (`<name>-0` ... `<name>-N-1`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from forge.components.jupyterhub import DOMAIN as SPAWN_DOMAIN
from forge.files import datafile
from forge.errors import ForgeError
from forge.files.paths import CLUSTERS_DIR
from forge.twin.flows import Flow
from forge.twin.steps import NodeDown, NodeTest

SCENARIOS_FILE = "scenarios.yaml"
WHOLE_POOL = "whole-pool"
Name = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=40)]
Quantity = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")]
Count = Union[Annotated[int, Field(ge=1, le=5000)], Literal["whole-pool"]]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Job(_Strict):
    name: Name
    # A task of workflows/ compiled by flytekit (its name: module.function, e.g. pretrain.train_h200):
    # kind, replicas, resources, PodTemplate and Kueue labels come from its compiled spec
    # (forge.twin.tasks), as propeller 1.16.8 would make them; the fields below then stay unset.
    task: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")] | None = None
    # How Flyte submits it: PyTorchJob (the PyTorch plugin), Pod (a plain container task), or
    # Workload (Kueue's own object, for a kind whose controller is not in the box); or Spawn, a
    # developer pod the project's JupyterHub starts for `user` with `profile` (forge.twin.spawn).
    kind: Literal["PyTorchJob", "Pod", "Workload", "Spawn"] | None = None
    project: Name
    domain: Name
    count: Annotated[int, Field(ge=1, le=500)] = 1
    replicas: Count = 1
    # A PyTorchJob: elastic (torchrun; every replica a Worker), else one Master and replicas-1 Workers.
    elastic: bool = True
    resources: dict[str, Quantity] = {}
    priority: Name | None = None  # a WorkloadPriorityClass; default: the pods' PriorityClass (the project's)
    queue: Name | None = None  # a LocalQueue; default: Flyte's default label
    pod_template: Name | None = None  # default: propeller's default-pod-template-name
    annotations: dict[str, str] = {}
    user: Name | None = None  # a Spawn: who opens the server (its home is claim-<user>)
    profile: Name | None = None  # a Spawn: the slug of one of the hub's profiles


class Expect(_Strict):
    job: Name | None = None  # None: the step as a whole (infrastructure_untouched)
    admitted: Union[Literal["all"], Annotated[int, Field(ge=0)], None] = None
    pending: bool | None = None  # every copy stays unadmitted all along (forge.twin.run.HOLD_SECONDS)
    pending_reason: str | None = None  # ...with this text in its QuotaReserved condition
    preempted: Annotated[int, Field(ge=1)] | None = None  # at least this many copies pre-empted
    distinct_nodes: Count | None = None  # its pods bound to this many distinct nodes
    flavor: str | None = None  # admitted on this ResourceFlavor
    on_nodes_labelled: dict[str, str] = {}  # every pod on a node with these labels
    not_on_nodes_labelled: dict[str, str] = {}  # no pod on a node with these labels
    infrastructure_untouched: bool | None = None  # no pod outside the project namespaces evicted or gone
    # Never pre-empted all along: no copy by Kueue, none of its bound pods evicted or deleted (the
    # kube-scheduler's pre-emption included), held HOLD_SECONDS past the step's other expectations.
    never_preempted: bool | None = None
    bound: Annotated[int, Field(ge=1)] | None = None  # at least this many of its pods bound to nodes
    not_on_nodes_down: bool | None = None  # no pod of it on a node that is not Ready


class Rollout(_Strict):
    """A driver bump (the GPU Operator's, or the Network Operator's DOCA driver: `driver: ofed`),
    played with forge's node gate (forge.twin.driver_rollout): every GPU node goes to upgrade-required; the rollout must advance one node at a time on passed tests, stop at
    `fail_node` (its `fail_test` fails), and, with `release`, move on once it is released on the record."""
    fail_node: Name
    driver: Literal["gpu", "ofed"] = "gpu"  # k8s-operator-libs' driver name: nvidia.com/<driver>-driver-upgrade-state
    fail_test: Literal["dcgm", "nvlink", "nccl"] = "dcgm"
    passes: Annotated[int, Field(ge=1, le=50)] = 2  # nodes that must pass before fail_node is reached
    hold: Annotated[int, Field(ge=1, le=600)] = 15  # seconds no node may start after the failure
    release: bool = False  # then release fail_node on the record and see the next node start
    wait_for_jobs: Annotated[int, Field(ge=0, le=600)] = 5  # the stand-in's waitForCompletion timeout, seconds


class Step(_Strict):
    finish: list[Name] = []  # jobs of earlier steps that end first (forge.twin.steps)
    node_down: NodeDown | None = None
    submit: list[Job] = []
    rollout: Rollout | None = None  # after the submissions, before the expectations
    node_test: NodeTest | None = None  # started after this step's submissions
    expect: list[Expect] = []
    flows: list[Flow] = []  # judged once the expectations hold (forge.twin.flows)
    within: Annotated[int, Field(ge=1, le=1800)] = 120  # seconds to wait for the expectations


class Scenario(_Strict):
    name: Name
    description: str = ""
    steps: Annotated[list[Step], Field(min_length=1)]


class ScenarioFile(_Strict):
    scenarios: list[Scenario]


def _rules(model: ScenarioFile):
    seen: set[str] = set()
    for i, scenario in enumerate(model.scenarios):
        if scenario.name in seen:
            yield ("scenarios", i, "name"), f"scenario {scenario.name!r} is named twice"
        seen.add(scenario.name)
        jobs: set[str] = set()
        for s, step in enumerate(scenario.steps):
            for f, name in enumerate(step.finish):
                if name not in jobs:
                    yield (("scenarios", i, "steps", s, "finish", f), f"no job {name!r} runs before this step (have: {', '.join(sorted(jobs)) or 'none'})")
            for field, name in (("node_down", step.node_down and step.node_down.runs), ("node_test", step.node_test and step.node_test.peer_runs)):
                if name and name not in jobs | {j.name for j in step.submit}:
                    yield (("scenarios", i, "steps", s, field), f"no job {name!r} is submitted by this step or an earlier one")
            for j, job in enumerate(step.submit):
                where = ("scenarios", i, "steps", s, "submit", j)
                if job.kind == "Spawn":
                    yield from _spawn_rules(job, where)
                elif job.task is None and (job.kind is None or not job.resources):
                    yield where, f"job {job.name!r} names no task: give `task` (a compiled task of workflows/) or `kind` and `resources`"
                elif job.user or job.profile:
                    yield where, f"job {job.name!r}: `user` and `profile` are for `kind: Spawn` (a developer pod) only"
                if job.task is not None and (job.kind or job.resources or job.pod_template or job.queue or job.priority):
                    yield where, f"job {job.name!r} names task {job.task}: its kind, resources, pod_template, queue and priority come from it"
            jobs = (jobs - set(step.finish)) | {j.name for j in step.submit} | ({step.node_test.name} if step.node_test else set())
            for e, expect in enumerate(step.expect):
                if expect.job is not None and expect.job not in jobs:
                    yield (("scenarios", i, "steps", s, "expect", e, "job"),
                           f"no job {expect.job!r} is submitted by this step or an earlier one (have: {', '.join(sorted(jobs)) or 'none'})")


def _spawn_rules(job: Job, where: tuple):
    if not job.user or not job.profile:
        yield where, f"spawn {job.name!r} needs `user` and `profile` (a slug of the hub's profileList)"
    if job.domain != SPAWN_DOMAIN:
        yield where, f"spawn {job.name!r}: developer pods run in the project's '{SPAWN_DOMAIN}' domain"
    if job.resources or job.task or job.count != 1 or job.replicas != 1 or job.queue or job.priority or job.pod_template:
        yield where, (f"spawn {job.name!r}: its resources, queue and priority come from the hub's profile and values; "
                      "give only project, domain, user and profile")


def scenario_file(root: Path, cluster: str) -> Path:
    return root / CLUSTERS_DIR / cluster / SCENARIOS_FILE


def load_scenarios(root: Path, cluster: str, names: tuple[str, ...] = ()) -> list[Scenario]:
    path = scenario_file(root, cluster)
    shown = str(path.relative_to(root))
    if not path.is_symlink() and not path.exists():  # a FIFO or a link is the reader's to refuse
        raise ForgeError(f"{shown}: no such file: the box has no scenarios for cluster {cluster} "
                         "(docs/twin.md says how to write them)")
    scenarios = datafile.load(path, ScenarioFile, shown, _rules, root=root).scenarios
    if not names:
        return scenarios
    known = {s.name: s for s in scenarios}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ForgeError(f"{shown}: no scenario named {', '.join(unknown)} (have: {', '.join(known)})")
    return [known[n] for n in names]
