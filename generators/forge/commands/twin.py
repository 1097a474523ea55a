"""`forge twin`: the fleet in a box (docs/twin.md).

    forge twin up CLUSTER          start a box and leave it running; prints its kubeconfig
    forge twin apply CLUSTER       sync every Application into it as Argo CD would; list refusals
    forge twin run CLUSTER [S...]  apply, then run the cluster's scenarios (all, or those named)
    forge twin upgrade CLUSTER --base REF   apply REF's output, then the working tree's over it
    forge twin karpenter CLUSTER   a cloud cluster's box that is up runs Karpenter (kwok provider):
                                   a pending pod of a pool makes a node, and the node goes with the pod
    forge twin argocd CLUSTER      the real Argo CD (optional build) converges the box that is up
                                   from a git daemon of the working tree, as docs/bootstrap.md says
    forge twin down [CLUSTER]      stop a box (all of them without CLUSTER)
    forge twin status              the boxes that are up

apply, run and upgrade use the cluster's box when one is up, else start one for as long as the
command runs. Exit codes: 0 passed; 1 refusals or failed scenarios; 2 bad input or a box that
cannot start; 130 interrupted.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import click

from forge.commands.common import EXIT_FOUND, root_option, user_errors
from forge.errors import ForgeError
from forge.fleet import ClusterPlan, load_fleet
from forge.twin.box import TWIN_DIR, BoxState, running_box, state_folder
from forge.twin.kube import Kube, connect
from forge.twin.pki import Pki
from forge.twin.processes import pid_alive
from forge.twin.sources import applications
from forge.twin.supervise import FAILED, READY, log_file
from forge.twin.sync import Syncer, SyncReport

UP_TIMEOUT = 3600.0  # a cold build of the programs takes minutes; its lines keep coming meanwhile
SUPERVISOR = "forge.twin.supervise"


def say(line: str) -> None:
    click.echo(line, err=True)


no_render_option = click.option("--no-render", is_flag=True,
                                 help="Apply build/rendered as it is (default: render what changed first).")
upstream_option = click.option("--upstream", type=click.Path(file_okay=False, path_type=Path), envvar="FORGE_UPSTREAM",
                               help="Upstream chart data: the CRDs each chart installs. [env: FORGE_UPSTREAM]")


@click.group()
def twin() -> None:
    """The fleet in a box: a real control plane and Kueue, forge's output applied, scenarios run."""


def _need_upstream(upstream: Path | None) -> Path:
    if upstream is None:
        raise ForgeError("the box applies the CRDs each chart installs from the upstream chart data: "
                         "give --upstream DIR or set FORGE_UPSTREAM (make sets it from ../shared/upstream)")
    if not upstream.is_dir():
        raise ForgeError(f"--upstream {upstream}: no such folder")
    return upstream


def _plan(root: Path, cluster: str) -> ClusterPlan:
    plans = {p.name: p for p in load_fleet(root)}
    if cluster not in plans:
        raise ForgeError(f"no cluster {cluster!r} (have: {', '.join(plans)})")
    return plans[cluster]


def _live_state(root: Path, cluster: str) -> BoxState | None:
    state = BoxState.load(state_folder(root, cluster))
    if state is None or not state.ready or not pid_alive(state.supervisor_pid, SUPERVISOR):
        return None
    return state


def _argocd_crds(root: Path, upstream: Path | None) -> Path | None:
    from forge.twin.pins import argocd_crds_dir

    return argocd_crds_dir(root, upstream)


@contextmanager
def _box(root: Path, plan: ClusterPlan, upstream: Path | None) -> Iterator[tuple[Kube, BoxState]]:
    """The cluster's running box, else one started for this command only."""
    state = _live_state(root, plan.name)
    if state is not None:
        dead = [name for name, pid in state.pids.items() if not pid_alive(pid, name)]
        if dead:
            logs = state_folder(root, plan.name) / "logs"
            raise ForgeError(f"the box of {plan.name} is broken: {', '.join(dead)} exited (see {logs}); "
                             f"`forge twin down {plan.name}` and start it again")
        say(f"twin: using the box of {plan.name} that is up ({state.kubeconfig})")
        pki = Pki(state_folder(root, plan.name) / "pki")
        yield connect(state.server, pki.token(), pki.ca), state
        return
    with running_box(root, plan, upstream, say) as state:
        pki = Pki(state_folder(root, plan.name) / "pki")
        yield connect(state.server, pki.token(), pki.ca), state


def _syncer(kube: Kube, state: BoxState, plan: ClusterPlan) -> Syncer:
    from forge.twin.box import box_syncer

    return box_syncer(kube, state, plan, say)


def _render(root: Path) -> None:
    from forge.render.overlays import render_all

    render_all(root)  # incremental: only what changed since the last render


def _print_sync(report: SyncReport, state: BoxState) -> bool:
    for line in state.nfd_findings:
        click.echo(f"refused by nfd-master: {line}")
    for aside in report.set_aside:
        click.echo(f"set aside: {aside}")
    for changed in report.box_only:
        click.echo(f"box-only: {changed}")
    for refusal in report.refused:
        click.echo(f"refused: {refusal}")
    if report.already:
        click.echo(f"{report.already} CRDs were applied, identical, when the box started (not sent again)")
    click.echo(f"applied {report.applied} objects in {report.seconds:.1f}s ({report.rate:.0f}/s); "
               f"{len(report.refused) + len(state.nfd_findings)} refused, {len(report.set_aside)} set aside")
    return not report.refused and not state.nfd_findings


@twin.command()
@root_option
@click.argument("cluster")
@upstream_option
@user_errors
def up(root: Path, cluster: str, upstream: Path | None) -> None:
    """Start a box for CLUSTER and leave it running; prints the path of its kubeconfig."""
    upstream = _need_upstream(upstream)
    _plan(root, cluster)
    if _live_state(root, cluster) is not None:
        raise ForgeError(f"a box of {cluster} is already up: `forge twin down {cluster}` first")
    _render(root)
    log = log_file(root, cluster)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", SUPERVISOR, str(root), cluster, str(upstream or ""), str(os.getpid())],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _follow(log, proc)
    except KeyboardInterrupt:
        proc.terminate()
        raise
    state = BoxState.load(state_folder(root, cluster))
    click.echo(f"box of {cluster} is up: {state.server if state else '?'}")
    click.echo(f"export KUBECONFIG={(state_folder(root, cluster) / 'kubeconfig').resolve()}")


def _follow(log: Path, proc: subprocess.Popen) -> None:
    """Echo the supervisor's lines until it says ready or failed."""
    deadline = time.monotonic() + UP_TIMEOUT
    shown = 0
    while time.monotonic() < deadline:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        for line in lines[shown:]:
            if line == READY:
                return
            say(line)
        shown = len(lines)
        if any(line.startswith(FAILED) for line in lines) or proc.poll() is not None:
            proc.wait(timeout=60)
            raise ForgeError(f"the box did not start (see {log})")
        time.sleep(0.3)
    proc.terminate()
    raise ForgeError(f"the box was not up after {UP_TIMEOUT:.0f}s (see {log})")


@twin.command()
@root_option
@click.argument("cluster")
@upstream_option
@no_render_option
@user_errors
def apply(root: Path, cluster: str, upstream: Path | None, no_render: bool) -> None:
    """Sync every Application of CLUSTER into its box as Argo CD would; list what is refused."""
    upstream = _need_upstream(upstream)
    plan = _plan(root, cluster)
    if not no_render:
        _render(root)
    apps = applications(root, plan, upstream, _argocd_crds(root, upstream))
    with _box(root, plan, upstream) as (kube, state):
        ok = _print_sync(_syncer(kube, state, plan).sync(apps), state)
    if not ok:
        sys.exit(EXIT_FOUND)


@twin.command()
@root_option
@click.argument("cluster")
@click.argument("scenarios", nargs=-1)
@upstream_option
@no_render_option
@user_errors
def run(root: Path, cluster: str, scenarios: tuple[str, ...], upstream: Path | None, no_render: bool) -> None:
    """Apply, then run CLUSTER's scenarios (clusters/CLUSTER/scenarios.yaml): all, or those named."""
    upstream = _need_upstream(upstream)
    from forge.twin.run import box_runner
    from forge.twin.scenario import load_scenarios
    from forge.twin.tasks import resolve

    plan = _plan(root, cluster)
    chosen = resolve(root, load_scenarios(root, cluster, scenarios))  # jobs naming a compiled task of workflows/
    if not no_render:
        _render(root)
    apps = applications(root, plan, upstream, _argocd_crds(root, upstream))
    failed = 0
    with _box(root, plan, upstream) as (kube, state):
        if not _print_sync(_syncer(kube, state, plan).sync(apps), state):
            sys.exit(EXIT_FOUND)
        runner = box_runner(root, kube, plan, say)
        for scenario in chosen:
            outcome = runner.run(scenario)
            verdict = "passed" if outcome.passed else "FAILED"
            click.echo(f"scenario {cluster}/{scenario.name}: {verdict} in {outcome.seconds:.1f}s")
            for line in outcome.lines:
                click.echo(f"  {line}")
            failed += not outcome.passed
    click.echo(f"{len(chosen) - failed} of {len(chosen)} scenarios passed on {cluster}")
    if failed:
        sys.exit(EXIT_FOUND)


@twin.command()
@root_option
@click.argument("cluster")
@click.option("--base", "ref", required=True, help="The revision Argo CD runs today (e.g. origin/main).")
@upstream_option
@user_errors
def upgrade(root: Path, cluster: str, ref: str, upstream: Path | None) -> None:
    """Apply REF's output, then the working tree's over it: what the server refuses of the change
    (immutable fields, CEL transition rules). `forge diff` shows these refusals as risks."""
    upstream = _need_upstream(upstream)
    from forge.twin.upgrade import play_upgrade

    plan = _plan(root, cluster)
    _render(root)
    with _box(root, plan, upstream) as (kube, state):
        result = play_upgrade(root, plan, kube, _syncer(kube, state, plan), ref, upstream, _argocd_crds(root, upstream), say)
    if result.base_report.refused:
        click.echo(f"note: the base {ref} itself has {len(result.base_report.refused)} refusals (`forge twin apply` on it lists them)")
    for refusal in result.refused:
        click.echo(f"refused on upgrade: {refusal}")
    click.echo(f"upgrade from {ref} ({result.base[:12]}): {len(result.refused)} refused")
    if result.refused:
        sys.exit(EXIT_FOUND)


@twin.command()
@root_option
@click.argument("cluster")
@click.option("--pool", default="h200-spot", show_default=True, help="The NodePool a pending pod is made for.")
@upstream_option
@no_render_option
@user_errors
def karpenter(root: Path, cluster: str, pool: str, upstream: Path | None, no_render: bool) -> None:
    """Check the real Karpenter (its kwok provider) that CLUSTER's box runs (`forge twin up`, a
    cloud cluster): a pod that only POOL takes makes a NodeClaim and a Ready node, removed after
    the pod is deleted. The cluster's NodePools are synced first, as `forge twin apply` syncs them."""
    from forge.twin import karpenter as kp

    upstream = _need_upstream(upstream)
    plan = _plan(root, cluster)
    state = _live_state(root, cluster)
    if state is None:
        raise ForgeError(f"no box of {cluster} is up: `forge twin up {cluster}` first")
    if not no_render:
        _render(root)
    apps = applications(root, plan, upstream, None)
    obj = kp.rendered_pool(apps, pool)
    if not state.karpenter:
        raise ForgeError(f"the box of {cluster} runs no Karpenter: it was started before the box ran it; "
                         f"`forge twin down {cluster}` and `forge twin up {cluster}` again")
    gpus = next((p.instance.gpu_count for p in plan.cluster.pools if p.name == pool), 0)
    pki = Pki(state_folder(root, cluster) / "pki")
    kube = connect(state.server, pki.token(), pki.ca)
    try:
        app = kp.karpenter_app(apps)
        assert app is not None  # rendered_pool found the pool in it
        if not _print_sync(_syncer(kube, state, plan).sync([app]), state):
            sys.exit(EXIT_FOUND)
        made = kp.burst(kube, obj, gpus, say)
    finally:
        kube.close()
    click.echo(f"karpenter {cluster}/{pool}: node made {made.made_seconds:.1f}s after the pod, "
               f"removed {made.removed_seconds:.1f}s after it was deleted")


@twin.command()
@root_option
@click.argument("cluster")
@upstream_option
@click.option("--timeout", type=click.FloatRange(1, 7200), default=1800, show_default=True,
              help="Seconds to wait for every Application to be Synced and Healthy.")
@user_errors
def argocd(root: Path, cluster: str, upstream: Path | None, timeout: float) -> None:
    """Run the real Argo CD (twin.argocd-box, built on first use) against CLUSTER's box that is up
    (`forge twin up`): the bootstrap of docs/bootstrap.md applied by hand, then a wait until every
    Application is Synced and Healthy, naming the others in Argo CD's words (exit 2)."""
    from forge.twin.argocd import run as argocd_run

    upstream = _need_upstream(upstream)
    plan = _plan(root, cluster)  # a cluster forge knows, its inventory valid
    state = _live_state(root, cluster)
    if state is None:
        raise ForgeError(f"no box of {cluster} is up: `forge twin up {cluster}` first")
    work = state_folder(root, cluster) / "argocd"
    shutil.rmtree(work, ignore_errors=True)
    progress = argocd_run.run(root, plan, Path(state.kubeconfig), upstream, work, timeout, say)
    click.echo(f"argocd {cluster}: {len(progress.order)} Applications Synced and Healthy")


@twin.command()
@root_option
@click.argument("cluster", required=False)
@user_errors
def down(root: Path, cluster: str | None) -> None:
    """Stop CLUSTER's box (every box without CLUSTER), leaving no process behind."""
    folders = [state_folder(root, cluster)] if cluster else sorted(p for p in (root / TWIN_DIR).glob("*") if p.is_dir())
    stopped = 0
    for folder in folders:
        state = BoxState.load(folder)
        if state is None:
            continue
        _stop(state)
        shutil.rmtree(folder, ignore_errors=True)  # what a crashed owner could not remove
        stopped += 1
        click.echo(f"box of {state.cluster} stopped")
    if not stopped:
        click.echo(f"no box is up{f' for {cluster}' if cluster else ''}")


def _stop(state: BoxState) -> None:
    if pid_alive(state.supervisor_pid, SUPERVISOR):
        os.kill(state.supervisor_pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while pid_alive(state.supervisor_pid, SUPERVISOR) and time.monotonic() < deadline:
            time.sleep(0.2)
        if pid_alive(state.supervisor_pid, SUPERVISOR):
            os.kill(state.supervisor_pid, signal.SIGKILL)
    # The servers die with the supervisor; make sure, by name, before saying so.
    for name, pid in state.pids.items():
        if pid_alive(pid, name):
            os.kill(pid, signal.SIGKILL)


@twin.command()
@root_option
@user_errors
def status(root: Path) -> None:
    """The boxes that are up, with their kubeconfig."""
    found = 0
    for folder in sorted(p for p in (root / TWIN_DIR).glob("*") if p.is_dir()):
        state = _live_state(root, folder.name)
        if state is not None:
            found += 1
            click.echo(f"{state.cluster}: up at {state.server}, KUBECONFIG={state.kubeconfig}")
    if not found:
        click.echo("no box is up")
