"""`forge promote`: a ring's ref moves (real git, in a throwaway repo) only when the ring before it
passes its gates, read over HTTP from a local server answering with recorded Argo CD and
Prometheus answers (tests/rollout/apis.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, commit, copy_repo_inputs, edit, forge, git, regenerate
from tests.rollout.apis import FIXTURES, Apis

NOW = "2026-12-02T14:00:00Z"  # the recorded canary has been Healthy since 08:00 (soak: 240 minutes)
GAUGES = ("gpu_operator_nodes_upgrades_pending", "gpu_operator_nodes_upgrades_in_progress", "gpu_operator_nodes_upgrades_failed")


def point_at(root: Path, url: str) -> None:
    for cluster in ("a100", "h200"):
        path = root / "clusters" / cluster / "inventory.yaml"
        text = edit(path.read_text(), f"https://argocd.{cluster}.exa.internal", f"{url}/{cluster}/argocd")
        # Prometheus as the inventory reaches it: through Grafana's data-source proxy (docs/rollout.md).
        proxy = f"https://grafana.{cluster}.exa.internal/api/datasources/proxy/uid/prometheus"
        path.write_text(edit(text, proxy, f"{url}/{cluster}/prometheus"))


@pytest.fixture(scope="module")
def served():
    with Apis() as server:
        yield server


@pytest.fixture
def apis(served):
    served.scenario, served.commit = {}, ""
    served.calls.clear()
    return served


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory, served):
    """The shipped fleets and rings in a git repo on main, canary promoted once from main."""
    top = tmp_path_factory.mktemp("rollout")
    root = copy_repo_inputs(top / "repo")
    point_at(root, served.url)
    regenerate(root)
    git(top, "init", "-q", "-b", "main", str(root))
    commit(root, "base")
    assert forge(root, "promote", "canary").exit_code == 0
    assert forge(root, "promote", "fleet", "--now", NOW).exit_code == 1  # no answers: refused
    return root


@pytest.fixture
def repo(base_repo, tmp_path, apis):
    return Path(shutil.copytree(base_repo, tmp_path / "repo", symlinks=True))


def ref(root: Path, ring: str) -> str | None:
    out = git(root, "for-each-ref", "--format=%(objectname)", f"refs/heads/forge/ring/{ring}").strip()
    return out or None


def driver_bump(root: Path) -> str:
    """A driver version bump merged to main, and the canary promoted from main."""
    path = root / "charts" / "versions.yaml"
    path.write_text(path.read_text() + "\n# driver bump\n")
    bumped = commit(root, "driver bump")
    result = forge(root, "promote", "canary")
    assert result.exit_code == 0, result.output
    return bumped


def canary_answers(apis: Apis, commit_: str, applications: str = "argocd-a100-healthy.json", **prometheus: str) -> None:
    apis.commit = commit_
    apis.scenario = {("a100", "applications"): applications, **{("a100", k): v for k, v in prometheus.items()}}


def test_a_change_on_main_reaches_only_the_canary_ring(repo):
    before = ref(repo, "fleet")
    bumped = driver_bump(repo)
    assert ref(repo, "canary") == bumped
    assert ref(repo, "fleet") == before  # the fleet ring was never promoted: no ref yet
    # What each ring's clusters track: their ring's ref, never main.
    for cluster, ring in (("a100", "canary"), ("h200", "fleet")):
        apps = yaml.safe_load((repo / f"clusters/{cluster}/argocd/apps/application-gpu-operator.yaml").read_text().split("\n", 1)[1])
        root_app = yaml.safe_load((repo / f"clusters/{cluster}/argocd/root-application.yaml").read_text().split("\n", 1)[1])
        ours = [s for s in apps["spec"]["sources"] if "exa-labs/forge" in s["repoURL"]]
        assert ours and {s["targetRevision"] for s in ours} == {f"forge/ring/{ring}"}
        assert root_app["spec"]["source"]["targetRevision"] == f"forge/ring/{ring}"


def test_promote_refuses_while_the_canary_clusterpolicy_is_not_ready(repo, apis):
    bumped = driver_bump(repo)
    canary_answers(apis, bumped, "argocd-a100-clusterpolicy-notready.json")
    result = forge(repo, "promote", "fleet", "--now", NOW)
    assert result.exit_code == 1
    assert "a100: Application a100-gpu-operator is Progressing, not Healthy; ClusterPolicy cluster-policy: Progressing" in result.stderr
    assert ref(repo, "fleet") is None and ref(repo, "canary") == bumped


def test_promote_refuses_while_a_gate_alert_fired_within_the_soak(repo, apis):
    bumped = driver_bump(repo)
    canary_answers(apis, bumped, alerts="prometheus-alert-firing.json")
    result = forge(repo, "promote", "fleet", "--now", NOW)
    assert result.exit_code == 1
    assert "a100: alert GpuXidCriticalError fired within the soak time (gpu=3, node=a100-gpu-04, severity=critical)" in result.stderr
    assert ref(repo, "fleet") is None


def test_promote_refuses_while_a_node_is_held_in_an_upgrade(repo, apis):
    bumped = driver_bump(repo)
    canary_answers(apis, bumped, gpu_operator_nodes_upgrades_in_progress="prometheus-upgrade-in-progress.json")
    result = forge(repo, "promote", "fleet", "--now", NOW)
    assert result.exit_code == 1
    assert "a100: 1 GPU node(s) held in a driver upgrade" in result.stderr


def test_promote_refuses_before_the_soak_time_and_on_another_commit(repo, apis):
    bumped = driver_bump(repo)
    canary_answers(apis, bumped)
    early = forge(repo, "promote", "fleet", "--now", "2026-12-02T10:00:00Z")  # Healthy for two hours of four
    assert early.exit_code == 1 and "has run the ring's commit only 120 minutes, less than the 240-minute soak of ring canary" in early.stderr
    canary_answers(apis, "0" * 40)  # the canary still runs another commit
    stale = forge(repo, "promote", "fleet", "--now", NOW)
    assert stale.exit_code == 1 and f"not the ring's commit {bumped[:12]}" in stale.stderr
    assert ref(repo, "fleet") is None


def test_promote_moves_only_the_fleet_ref_on_a_healthy_recording_and_says_which_calls(repo, apis):
    bumped = driver_bump(repo)
    canary_answers(apis, bumped)
    result = forge(repo, "promote", "fleet", "--now", NOW)
    assert result.exit_code == 0, result.output
    assert ref(repo, "fleet") == bumped and ref(repo, "canary") == bumped
    assert f"promoted: forge/ring/fleet (none) -> {bumped[:12]} (what ring canary runs)" in result.output
    # The calls: the canary's Applications by label, then one instant query per gate, over the soak.
    assert ("/a100/argocd/api/v1/applications", {"selector": "forge.exa.ai/cluster=a100"}) in apis.calls
    queries = [p["query"] for path, p in apis.calls if path == "/a100/prometheus/api/v1/query"]
    assert queries[-4:] == ['max_over_time(ALERTS{alertstate="firing",alertname=~"AlluxioWorkerDown|FlytePropellerPanics|'
                            'GpuDoubleBitEccError|GpuFellOffBus|GpuRowRemapFailure|GpuXidCriticalError|NicPortDown"}[240m])',
                            *(f"max(max_over_time({g}[240m])) > 0" for g in GAUGES)]
    assert not any(path.startswith("/h200/") for path, _ in apis.calls)  # the ring promoted is not asked


def test_roll_back_promotes_the_previous_commit_without_gates(repo, apis):
    first = ref(repo, "canary")
    bumped = driver_bump(repo)
    canary_answers(apis, bumped, "argocd-a100-clusterpolicy-notready.json")
    result = forge(repo, "promote", "canary", "--to", first)
    assert result.exit_code == 0, result.output
    assert ref(repo, "canary") == first
    ahead = forge(repo, "promote", "canary", "--to", bumped)  # not a commit the ring ran before
    assert ahead.exit_code == 2 and "a roll back goes to an earlier one" in ahead.output


def test_promote_pushes_to_a_remote_with_a_lease(repo, apis, tmp_path):
    remote = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    bumped = driver_bump(repo)
    git(repo, "push", "-q", "origin", "main")
    canary_answers(apis, bumped)
    assert forge(repo, "promote", "canary", "--remote", "origin").exit_code == 0
    result = forge(repo, "promote", "fleet", "--remote", "origin", "--now", NOW)
    assert result.exit_code == 0, result.output
    assert git(remote, "rev-parse", "refs/heads/forge/ring/fleet").strip() == bumped
    # Someone moved the fleet ref on the remote meanwhile: it is read again, not overwritten blindly.
    git(remote, "update-ref", "refs/heads/forge/ring/fleet", git(remote, "rev-parse", "main~1").strip())
    again = forge(repo, "promote", "fleet", "--remote", "origin", "--now", NOW)
    assert again.exit_code == 0 and f"-> {bumped[:12]}" in again.output and "(none)" not in again.output, again.output


def test_a_clone_reads_every_ring_ref_from_the_remote_before_the_fleet_ref_exists(repo, apis, tmp_path):
    """The fleet ref not pushed yet and the clone's view of canary stale: the remote's canary decides."""
    remote = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(remote))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    git(repo, "remote", "add", "origin", str(remote))
    bumped = driver_bump(repo)  # canary moves to the bump, pushed by someone else
    git(repo, "push", "-q", "origin", "main", "forge/ring/canary")
    canary_answers(apis, bumped)
    result = forge(clone, "promote", "fleet", "--remote", "origin", "--now", NOW)
    assert result.exit_code == 0, result.output
    assert git(remote, "rev-parse", "refs/heads/forge/ring/fleet").strip() == bumped


def test_an_unknown_ring_is_refused_with_the_choices(repo):
    result = forge(repo, "promote", "staging")
    assert result.exit_code == 2
    assert "no ring 'staging': name one of canary, fleet" in result.output


def test_the_recording_holds_every_generated_application_of_the_canary():
    """A component added to a100 without its Application in the recording would fail every
    promotion ("not reported by Argo CD"): the fixture follows the generated apps."""
    names = {a["metadata"]["name"] for a in json.loads((FIXTURES / "argocd-a100-healthy.json").read_text())["items"]}
    files = sorted((REPO / "clusters/a100/argocd/apps").glob("application-*.yaml"))
    assert names == {f"a100-{f.stem.removeprefix('application-')}" for f in files} | {"a100-root"}


# --- issue 31: the soak from the commit, a bad node on the record ------------------------------

def test_the_soak_starts_when_the_canary_reported_the_commit_not_at_its_last_health_change(repo, apis):
    """An h200-only change leaves a100 Healthy since days ago; it reported the commit at 12:00."""
    bumped = driver_bump(repo)
    canary_answers(apis, bumped, "argocd-a100-healthy-for-days.json")
    result = forge(repo, "promote", "fleet", "--now", NOW)
    assert result.exit_code == 1
    assert "a100: Application a100-gpu-operator has run the ring's commit only 120 minutes, less than the 240-minute soak" in result.stderr
    assert forge(repo, "promote", "fleet", "--now", "2026-12-02T16:00:00Z").exit_code == 0


def test_promote_refuses_while_no_application_of_the_canary_reported_the_commit(repo, apis):
    bumped = driver_bump(repo)
    canary_answers(apis, bumped, "argocd-a100-no-history.json")
    result = forge(repo, "promote", "fleet", "--now", "2026-12-09T00:00:00Z")
    assert result.exit_code == 1
    assert f"a100: Application a100-root has no sync history of the ring's commit {bumped[:12]}" in result.stderr
    assert ref(repo, "fleet") is None


def test_a_node_known_bad_holds_the_promotion_until_accepted_on_the_record(repo, apis):
    bumped = driver_bump(repo)
    canary_answers(apis, bumped, "argocd-a100-clusterpolicy-per-node.json")
    refused = forge(repo, "promote", "fleet", "--now", NOW)
    assert refused.exit_code == 1 and ref(repo, "fleet") is None
    assert "a100: Application a100-gpu-operator: ClusterPolicy cluster-policy is not ready on some GPU nodes" in refused.stderr
    assert "forge promote --accept REASON" in refused.stderr
    empty = forge(repo, "promote", "fleet", "--now", NOW, "--accept", " ")
    assert empty.exit_code == 2 and "--accept: give the reason" in empty.output
    accepted = forge(repo, "promote", "fleet", "--now", NOW, "--accept", "a100-gpu-07 waits for an RMA (OPS-123)")
    assert accepted.exit_code == 0, accepted.output
    assert ref(repo, "fleet") == bumped
    note = git(repo, "notes", "--ref=refs/notes/forge/accepted", "show", bumped)
    assert "accepted: a100-gpu-07 waits for an RMA (OPS-123)" in note and "state-driver state-operator-validation" in note
