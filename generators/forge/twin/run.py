"""Run scenarios against a box: submit each step's jobs, wait for its expectations, judge, clean up.

What is judged is what the real controllers did: Kueue's Workload conditions (QuotaReserved,
Admitted, Evicted, Preempted) and admission (flavor, topology), the pods the training-operator
made and the scheduler bound, and the pods of the infrastructure before and after.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from forge.fleet import ClusterPlan
from forge.model.queues import FLYTE_PROJECT_LABEL
from forge.errors import ForgeError
from forge.twin.flows import ENGINE, ENGINE_PROGRAM, Flow, FlowJudge
from forge.twin.binaries import ensure_program
from forge.twin.box import state_folder
from forge.twin.cleanup import clean
from forge.twin.karpenter import NODECLAIM, nodes_removed
from forge.twin.kube import ApiError, Kube
from forge.twin.peers import Peers
from forge.twin.day import Day
from forge.twin.scenario import WHOLE_POOL, Expect, Job, Scenario, Step
from forge.twin.spawn import Spawner
from forge.twin.submit import SUBMITTED_LABEL, Propeller, build, namespace_of
from forge.twin.workloads import condition, is_true, shortfall, whole_pool

POLL_SECONDS = 0.5
HEARTBEAT_SECONDS = 10
CLEANUP_SECONDS = 120.0
# How long "stays pending" and "never pre-empted" must hold once every other expectation of the
# step is met (at most the step's `within`). The controllers act on an event within a cycle:
# Kueue re-queues an inadmissible workload on each cluster change and pre-empts in the same
# admission attempt, and the kube-scheduler retries a pod after at most 10 s of back-off
# (podMaxBackoffSeconds), so 30 s sees three of its attempts. Waiting the whole `within` (up to
# minutes) found nothing more and was most of a fleet's scenario time.
HOLD_SECONDS = 30.0
KUEUE = "kueue.x-k8s.io/v1beta2"
# A cloud cluster's box: how long after a scenario's cleanup Karpenter may take to remove the last
# node it made (consolidateAfter 5 s in the box, then forge's disruption budgets: 10% of a pool's
# nodes at a time: 100 p5e nodes took 716 s on 2 shared cores)
KARPENTER_SECONDS = 900.0
JOB_NAME_LABEL = "training.kubeflow.org/job-name"


@dataclass
class Submitted:
    job: Job
    objects: list[dict[str, Any]] = field(default_factory=list)  # as created (uid included)


@dataclass
class Outcome:
    scenario: str
    passed: bool
    lines: list[str]
    seconds: float


def box_runner(root: Path, kube: Kube, plan: ClusterPlan, say: Callable[[str], None]) -> "Runner":
    """The Runner `forge twin run` and `forge bench` both use: the cluster's Flyte settings, the
    NetworkPolicy engine its flows need, the box's logs folder for a rollout step's gate."""
    propeller = Propeller.from_values(root / "overlays" / plan.name / "flyte" / "values.yaml")
    return Runner(kube, plan, propeller, say, root, engine=ensure_program(root, ENGINE_PROGRAM, say)[ENGINE],
                  logs=state_folder(root, plan.name) / "logs")


class Runner:
    def __init__(self, kube: Kube, plan: ClusterPlan, propeller: Propeller, say: Callable[[str], None],
                 root: Path | None = None, engine: Path | None = None, logs: Path | None = None) -> None:
        self.kube, self.plan, self.propeller, self.say = kube, plan, propeller, say
        self.day = Day(kube, root or Path.cwd(), plan.name, say)
        self.spawner = Spawner(kube, plan, SUBMITTED_LABEL)  # developer pods, as their hub starts them
        self.ran: dict[str, set[str]] = {}  # a finished job -> the nodes its pods were on
        # Pods of a `never_preempted` job once seen bound (uid -> name): each must stay.
        self.watched: dict[str, dict[str, str]] = {}
        self.engine = engine  # the NetworkPolicy engine a step's flows need (forge.twin.flows)
        self.logs = logs  # the box's logs folder: where a rollout step's gate process writes
        # Copies (by the uid of what was submitted) whose Workload was seen pre-empted: a plain
        # pod's Workload goes with the pod it evicted, so the event is kept, not looked up again.
        self.preempted: set[str] = set()
        # Each copy's Workload uid once seen: Kueue's "Preempted" Event on it outlives the Workload
        # (a plain pod's goes within a poll of its eviction on a busy machine), so it still counts.
        self.workload_uids: dict[str, str] = {}
        self.projects = {ns["metadata"]["name"] for ns in kube.list("v1", "Namespace", selector=FLYTE_PROJECT_LABEL)}
        self.met = 0.0  # when the last step's expectations were first all met (time.monotonic())
        self._karpenter: bool | None = None

    def karpenter(self) -> bool:
        """Whether Karpenter makes this box's nodes (a cloud cluster's box serves NodeClaims)."""
        if self._karpenter is None:
            self._karpenter = any(p.karpenter for p in self.plan.cluster.pools) and self.kube.resource(*NODECLAIM) is not None
        return self._karpenter

    # ---- what the controllers did -------------------------------------------------------------------

    def workloads(self, sub: Submitted) -> list[dict[str, Any] | None]:
        """One Workload (or None, not made yet) per submitted copy."""
        out: list[dict[str, Any] | None] = []
        ns = namespace_of(sub.job)
        listed = self.kube.list(KUEUE, "Workload", ns)
        for obj in sub.objects:
            if obj["kind"] == "Workload":
                out.append(next((w for w in listed if w["metadata"]["uid"] == obj["metadata"]["uid"]), None))
            else:
                uid = obj["metadata"]["uid"]
                out.append(next((w for w in listed if any(o.get("uid") == uid for o in w["metadata"].get("ownerReferences") or [])), None))
        for obj, wl in zip(sub.objects, out):
            if wl:
                self.workload_uids[obj["metadata"]["uid"]] = wl["metadata"]["uid"]
            if wl and (is_true(wl, "Preempted") or (condition(wl, "Evicted") or {}).get("reason") == "Preempted"):
                self.preempted.add(obj["metadata"]["uid"])
        return out

    def preempted_by_events(self, sub: Submitted) -> None:
        """Copies whose Workload Kueue's scheduler recorded as pre-empted (its Event, reason
        Preempted), though the Workload itself may be gone by now."""
        events = self.kube.list("v1", "Event", namespace_of(sub.job))
        hit = {(e.get("involvedObject") or {}).get("uid") for e in events
               if e.get("reason") == "Preempted" and (e.get("involvedObject") or {}).get("kind") == "Workload"}
        self.preempted |= {copy for copy, wl in self.workload_uids.items() if wl in hit}

    def pods(self, sub: Submitted) -> list[dict[str, Any]]:
        ns = namespace_of(sub.job)
        out = []
        for obj in sub.objects:
            if obj["kind"] == "Pod":
                found = self.kube.get("v1", "Pod", obj["metadata"]["name"], ns)
                out += [found] if found else []
            elif obj["kind"] == "PyTorchJob":
                out += self.kube.list("v1", "Pod", ns, selector=f"{JOB_NAME_LABEL}={obj['metadata']['name']}")
        return out

    def infrastructure_pods(self) -> dict[str, str]:
        return {p["metadata"]["uid"]: f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                for p in self.kube.list("v1", "Pod") if p["metadata"]["namespace"] not in self.projects}

    # ---- judging --------------------------------------------------------------------------------------

    def judge(self, expect: Expect, subs: dict[str, Submitted], infra: dict[str, str]) -> str | None:
        """None when `expect` holds now, else what is wrong (the controllers' own words)."""
        if expect.infrastructure_untouched:
            now = {p["metadata"]["uid"]: p for p in self.kube.list("v1", "Pod") if p["metadata"]["namespace"] not in self.projects}
            gone = [name for uid, name in infra.items() if uid not in now or now[uid]["metadata"].get("deletionTimestamp")
                    or is_true(now[uid], "DisruptionTarget")]
            if gone:
                return f"infrastructure pods evicted or gone: {', '.join(sorted(gone)[:10])}"
        if expect.job is None:
            return None
        if expect.job in self.day.tests:
            return self._judge_bound(expect, self.day.test_pods(expect.job))
        sub = subs[expect.job]
        if expect.never_preempted and (broken := self._judge_kept(expect.job, sub)):
            return broken
        wls = self.workloads(sub)
        admitted = [w for w in wls if w and is_true(w, "Admitted")]
        want = len(wls) if expect.admitted == "all" else expect.admitted
        queue = f"ClusterQueue of {namespace_of(sub.job)}"
        if want is not None and len(admitted) < want:
            waiting = next((w for w in wls if w and not is_true(w, "Admitted")), None)
            said = (condition(waiting, "QuotaReserved") or {}).get("message", "") if waiting else "no Workload yet"
            if waiting:
                queue = f"ClusterQueue {((waiting.get('status') or {}).get('admission') or {}).get('clusterQueue') or self._queue_of(waiting)}"
            return f"job {expect.job}: {len(admitted)} of {len(wls)} admitted, want {want} ({queue}: {said}{shortfall(said)})"
        if expect.pending and admitted:
            return f"job {expect.job}: {len(admitted)} admitted, want none"
        if expect.pending_reason:
            said = " ".join((condition(w, "QuotaReserved") or {}).get("message", "") for w in wls if w)
            if expect.pending_reason not in said:
                return f"job {expect.job}: pending reason {expect.pending_reason!r} not seen (Kueue says: {said or 'nothing'})"
        if expect.preempted is not None:
            self.preempted_by_events(sub)
            hit = [o for o in sub.objects if o["metadata"]["uid"] in self.preempted]
            if len(hit) < expect.preempted:
                return f"job {expect.job}: {len(hit)} pre-empted, want at least {expect.preempted}"
        if expect.flavor:
            flavors = {f for w in admitted for ps in (w["status"]["admission"].get("podSetAssignments") or [])
                       for f in (ps.get("flavors") or {}).values()}
            if flavors != {expect.flavor}:
                return f"job {expect.job}: admitted on flavors {sorted(flavors)}, want {expect.flavor}"
        return self._judge_pods(expect, sub)

    def _queue_of(self, wl: dict[str, Any]) -> str:
        lq = self.kube.get(KUEUE, "LocalQueue", wl["spec"].get("queueName", ""), wl["metadata"]["namespace"])
        return (lq or {}).get("spec", {}).get("clusterQueue", "?")

    def _judge_kept(self, name: str, sub: Submitted) -> str | None:
        """A `never_preempted` job: no copy pre-empted by Kueue, no pod of it seen bound since gone."""
        self.workloads(sub)
        self.preempted_by_events(sub)
        hit = [o["metadata"]["name"] for o in sub.objects if o["metadata"]["uid"] in self.preempted]
        if hit:
            return f"job {name}: pre-empted by Kueue: {', '.join(hit[:5])}"
        now = {p["metadata"]["uid"]: p for p in self.pods(sub)}
        seen = self.watched.setdefault(name, {})
        gone = [n for uid, n in seen.items() if uid not in now or now[uid]["metadata"].get("deletionTimestamp")
                or is_true(now[uid], "DisruptionTarget")]
        if gone:
            said = "; ".join(f"{n}: {(condition(now[u], 'DisruptionTarget') or {}).get('message', 'deleted')}" if u in now else f"{n}: deleted"
                             for u, n in seen.items() if n in gone)
            return f"job {name}: pods evicted or gone: {said[:400]}"
        seen.update({uid: p["metadata"]["name"] for uid, p in now.items() if (p.get("spec") or {}).get("nodeName")})
        return None

    def _judge_bound(self, expect: Expect, pods: list[dict[str, Any]]) -> str | None:
        bound = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
        if expect.bound is not None and len(bound) < expect.bound:
            return f"job {expect.job}: {len(bound)} of {len(pods)} pods bound, want at least {expect.bound}"
        if expect.not_on_nodes_down:
            ready = {n["metadata"]["name"]: next((c.get("status") for c in n["status"].get("conditions") or [] if c["type"] == "Ready"), None)
                     for n in self.kube.list("v1", "Node")}
            down = [f"{p['metadata']['name']} on {p['spec']['nodeName']}" for p in bound if ready.get(p["spec"]["nodeName"]) != "True"]
            if down:
                return f"job {expect.job}: pods on nodes that are not Ready: {', '.join(down[:5])}"
        return None

    def _judge_pods(self, expect: Expect, sub: Submitted) -> str | None:
        if expect.bound is not None or expect.not_on_nodes_down:
            if (problem := self._judge_bound(expect, self.pods(sub))):
                return problem
        if expect.distinct_nodes is None and not expect.on_nodes_labelled and not expect.not_on_nodes_labelled:
            return None
        pods = self.pods(sub)
        bound = [p for p in pods if (p.get("spec") or {}).get("nodeName")]
        if expect.distinct_nodes is not None:
            want = whole_pool(self.plan, sub.job.resources) if expect.distinct_nodes == WHOLE_POOL else expect.distinct_nodes
            nodes = {p["spec"]["nodeName"] for p in bound}
            if len(nodes) < want or len(bound) < len(pods) or not pods:
                return f"job {expect.job}: {len(bound)} of {len(pods)} pods bound, on {len(nodes)} distinct nodes, want {want}"
        labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in self.kube.list("v1", "Node")}
        for pod in bound:
            node = pod["spec"]["nodeName"]
            have = labels.get(node, {})
            if any(have.get(k) != v for k, v in expect.on_nodes_labelled.items()):
                return f"job {expect.job}: pod {pod['metadata']['name']} on {node}, which lacks {expect.on_nodes_labelled}"
            if expect.not_on_nodes_labelled and all(have.get(k) == v for k, v in expect.not_on_nodes_labelled.items()):
                return f"job {expect.job}: pod {pod['metadata']['name']} on {node}, labelled {expect.not_on_nodes_labelled}"
        if not bound and (expect.on_nodes_labelled or expect.not_on_nodes_labelled):
            return f"job {expect.job}: no pod bound yet"
        return None

    def diagnose(self, subs: dict[str, Submitted]) -> str:
        """What the controllers say, for a failed wait: each Workload's conditions, and the nodes
        that are not Ready or not schedulable (Kueue's topology-aware placement skips them)."""
        lines = []
        for sub in subs.values():
            for obj, wl in zip(sub.objects, self.workloads(sub)):
                said = "; ".join(f"{c['type']}={c['status']} {c.get('reason', '')}: {c.get('message', '')}"
                                 for c in ((wl or {}).get("status") or {}).get("conditions") or [])
                lines.append(f"  {obj['kind']} {obj['metadata']['name']}: {said or 'no Workload'}")
            for pod in self.pods(sub):  # the scheduler's reason for a pod Kueue admitted but nothing placed
                held = next((c for c in (pod.get("status") or {}).get("conditions") or []
                             if c.get("type") == "PodScheduled" and c.get("status") == "False"), None)
                if held and not (pod.get("spec") or {}).get("schedulingGates"):
                    lines.append(f"  pod {pod['metadata']['name']}: not scheduled: {held.get('message', '')}")
        for node in self.kube.list("v1", "Node"):
            ready = next((c for c in node["status"].get("conditions") or [] if c["type"] == "Ready"), {})
            if ready.get("status") != "True" or node["spec"].get("unschedulable"):
                lines.append(f"  node {node['metadata']['name']}: Ready={ready.get('status')} {ready.get('reason', '')}, "
                             f"taints {node['spec'].get('taints')}")
        return "\n".join(lines[:40])

    # ---- running ------------------------------------------------------------------------------------

    def submit(self, job: Job, scenario: str) -> Submitted:
        if job.kind == "Spawn":
            assert job.user and job.profile  # the scenario file's rules
            return Submitted(job, [self.spawner.spawn(job.project, job.user, job.profile, scenario)])
        replicas = whole_pool(self.plan, job.resources) if job.replicas == WHOLE_POOL else job.replicas
        sub = Submitted(job)
        for i in range(job.count):
            name = job.name if job.count == 1 else f"{job.name}-{i}"
            sub.objects.append(self.kube.create(build(self.kube, self.propeller, job, name, replicas, scenario)))
        return sub

    def run(self, scenario: Scenario) -> Outcome:
        started = time.monotonic()
        try:
            outcome = self._steps(scenario, started)
        finally:
            self.day.restore()  # nodes back and node tests gone before the scenario's jobs are deleted
            removed, gone = self.cleanup(scenario.name)
        if removed:
            outcome.lines.append(removed)
        outcome.passed = outcome.passed and gone
        return outcome

    def _steps(self, scenario: Scenario, started: float) -> Outcome:
        lines: list[str] = []
        subs: dict[str, Submitted] = {}
        self.watched = {}  # by job name: another scenario's job of the same name is another job
        infra = self.infrastructure_pods()
        for number, step in enumerate(scenario.steps, 1):
            problem = self._before(step, subs)
            if problem:
                return Outcome(scenario.name, False, [f"step {number}: {problem}"], time.monotonic() - started)
            submitted = time.monotonic()
            for job in step.submit:
                try:
                    subs[job.name] = self.submit(job, scenario.name)
                except ApiError as exc:
                    return Outcome(scenario.name, False, [f"step {number}: job {job.name} refused: {exc.message}"],
                                   time.monotonic() - started)
            problem = self._rollout(step) if step.rollout else None
            problem = problem or self._node_test(step, subs) or self._wait(step.expect, step.within, subs, infra)
            problem = problem or self._flows(step.flows)
            if problem:
                return Outcome(scenario.name, False, [f"step {number}: {problem}"], time.monotonic() - started)
            made = f" ({len(self.kube.list(*NODECLAIM))} nodes made by Karpenter)" if self.karpenter() else ""
            lines.append(f"step {number}: {len(step.expect)} expectations held {self.met - submitted:.1f}s after "
                         f"its submissions{made}")
        return Outcome(scenario.name, True, lines, time.monotonic() - started)

    def _flows(self, flows: list[Flow]) -> str | None:
        if not flows:
            return None
        if self.engine is None:
            raise ForgeError("twin: this step states flows and the box was given no NetworkPolicy engine")
        wrong = FlowJudge(self.kube, Peers(self.kube, self.plan, self.propeller), self.engine).judge(flows)
        return "\n".join(wrong) or None
    def _rollout(self, step: Step) -> str | None:
        from forge.twin.driver_rollout import Play  # only a rollout step needs it
        assert step.rollout is not None
        logs = self.logs or Path(tempfile.mkdtemp(prefix="forge-twin-rollout-")) / "logs"
        problem = Play(self.kube, self.plan, step.rollout, self.projects, logs, self.say).run(step.within)
        return problem
    def _before(self, step: Step, subs: dict[str, Submitted]) -> str | None:
        """The day goes on: jobs that end, a node that goes NotReady (forge.twin.day)."""
        for name in step.finish:
            sub = subs.pop(name)
            self.ran[name] = {p["spec"]["nodeName"] for p in self.pods(sub) if (p.get("spec") or {}).get("nodeName")}
            if (problem := self.day.finish(sub.objects, namespace_of(sub.job), lambda: [w for w in self.workloads(sub) if w])):
                return f"job {name} finished, but {problem}"
        if step.node_down:
            runs = step.node_down.runs
            # a job finished in this step: the nodes it ran on (its server stopped, its node then went)
            running = (self.ran[runs] if runs not in subs else
                       {p["spec"]["nodeName"] for p in self.pods(subs[runs]) if (p.get("spec") or {}).get("nodeName")}) \
                if runs else set()
            return self.day.node_down(step.node_down, running, self.day.busy_nodes(self.projects))
        return None

    def _node_test(self, step: Step, subs: dict[str, Submitted]) -> str | None:
        if not step.node_test:
            return None
        peers = {p["spec"]["nodeName"] for p in self.pods(subs[step.node_test.peer_runs]) if (p.get("spec") or {}).get("nodeName")}
        try:
            return self.day.node_test(step.node_test, peers, self.day.busy_nodes(self.projects))
        except ApiError as exc:
            return f"node test {step.node_test.name} refused: {exc.message}"

    def _wait(self, expects: list[Expect], within: int, subs: dict[str, Submitted], infra: dict[str, str]) -> str | None:
        """Wait until every expectation holds; a `pending` or `never_preempted` one must hold all
        along, and for HOLD_SECONDS past the moment the others are met (never past `within`)."""
        started = time.monotonic()
        deadline, said = started + within, started
        # `pending` and `infrastructure_untouched` must hold all along; the others once each
        # (a pre-emption happens, then its pods are gone).
        lasting = [e for e in expects if e.pending or e.infrastructure_untouched or e.never_preempted]
        eventual = [e for e in expects if e not in lasting]
        # "stays pending" and "never pre-empted" are known only after a hold
        holds = any(e.pending or e.never_preempted for e in expects)
        met: float | None = None  # when every eventual expectation was first met
        while True:
            self.spawner.provision()  # the homes' volumes, as the cluster's provisioner makes them
            broken = next((p for e in lasting if (p := self.judge(e, subs, infra))), None)
            if broken:
                return broken
            judged = [(e, self.judge(e, subs, infra)) for e in eventual]
            eventual = [e for e, problem in judged if problem]
            problems = [problem for _, problem in judged if problem]
            now = time.monotonic()
            if not problems:
                met = now if met is None else met
                if not holds or now > min(deadline, met + HOLD_SECONDS):
                    self.met = met
                    return None
            if now > deadline:
                return f"after {within}s: {problems[0]}\n{self.diagnose(subs)}"
            if now - said >= HEARTBEAT_SECONDS:  # CI's log hears from a long wait at least this often
                said = now
                self.say(f"twin run: waiting {now - started:.0f}s of {within}s: {problems[0] if problems else 'pending holds'}")
            time.sleep(POLL_SECONDS)

    def cleanup(self, scenario: str) -> tuple[str, bool]:
        """Delete what the scenario left and wait until the cluster is idle again
        (forge.twin.cleanup), so the next scenario starts on an idle cluster; where Karpenter makes
        the nodes, until it has removed every node it made too. Returns what Karpenter did (a
        line of the outcome, else '') and whether its nodes are gone (a failure if not)."""
        started = time.monotonic()
        seconds, left = clean(self.kube, self.projects, f"{SUBMITTED_LABEL}={scenario}", CLEANUP_SECONDS)
        self.spawner.clean(scenario)
        if left:
            self.say(f"twin run: {scenario}: not idle after {seconds:.0f}s: {left}")
        else:
            self.say(f"twin run: {scenario}: cleaned up in {seconds:.1f}s")
        return nodes_removed(self.kube, started, KARPENTER_SECONDS, self.say) if self.karpenter() else ("", True)
