"""Bad input to `forge twin` is one clear line (file:line:field for the scenario file), exit 2, no
traceback, and no box is started (no box needed)."""
from __future__ import annotations

import pytest
import yaml

from tests.helpers import forge, git_repo_copy, line_of

GOOD_STEP = "      - submit:\n          - {name: pretrain, kind: PyTorchJob,"


@pytest.fixture
def repo(tmp_path):
    return git_repo_copy(tmp_path / "repo")


@pytest.mark.parametrize("old, new, field, message", [
    ("{name: pretrain, task: pretrain.train_h200,", "{name: pretrain, task: pretrain.train_h200, kind: TFJob,", "steps[0].submit[0].kind",
     "input should be 'pytorchjob', 'pod', 'workload' or 'spawn'"),
    ("{name: pretrain, task: pretrain.train_h200,", "{name: pretrain, gpus: 8, task: pretrain.train_h200,", "steps[0].submit[0].gpus", "unknown key"),
    ("{job: pretrain, admitted: all,", "{job: pretrian, admitted: all,", "steps[0].expect[0].job",
     "no job 'pretrian' is submitted by this step or an earlier one (have: pretrain)"),
    ("within: 180\n\n  - name: thirty-sweeps", "within: 0\n\n  - name: thirty-sweeps", "steps[0].within", "greater than or equal to 1"),
])
def test_a_bad_scenario_file_is_named_by_file_line_and_field(repo, upstream, old, new, field, message):
    _refused(repo, upstream, old, new, 0, field, message)


# The busy fleet's step fields (forge.twin.steps), in scenarios busy-pretrain and busy-node-test; the index in
# the message is looked up by name, so a scenario added before them does not break the test.
@pytest.mark.parametrize("old, new, scenario, field, message", [
    ("      - finish: [reranker, sweep]", "      - finish: [reranker, sweeps]", "busy-pretrain", "steps[1].finish[1]",
     "no job 'sweeps' runs before this step (have: embed, reranker, sweep)"),
    ("node_test: {name: nccl, peer_runs: reranker}", "node_test: {name: nccl, peer_runs: rerank}", "busy-node-test", "steps[1].node_test",
     "no job 'rerank' is submitted by this step or an earlier one"),
    ("node_test: {name: nccl, peer_runs: reranker}", "node_test: {name: nccl, peer: reranker}", "busy-node-test", "steps[1].node_test.peer",
     "unknown key"),
])
def test_a_bad_busy_step_is_named_by_file_line_and_field(repo, upstream, old, new, scenario, field, message):
    names = [s["name"] for s in yaml.safe_load((repo / "clusters/h200/scenarios.yaml").read_text())["scenarios"]]
    _refused(repo, upstream, old, new, names.index(scenario), field, message)


SPAWN = "{name: first, kind: Spawn, project: research, domain: development, user: alice, profile: gpu}"


@pytest.mark.parametrize("new, field, message", [
    (SPAWN.replace(" user: alice,", ""), "steps[0].submit[0]", "spawn 'first' needs `user` and `profile`"),
    (SPAWN.replace("domain: development", "domain: production"), "steps[0].submit[0]",
     "developer pods run in the project's 'development' domain"),
    (SPAWN.replace("profile: gpu}", "profile: gpu, resources: {cpu: '1'}}"), "steps[0].submit[0]",
     "its resources, queue and priority come from the hub's profile"),
    (SPAWN.replace("user: alice", "user: Alice"), "steps[0].submit[0].user", "string should match pattern"),
])
def test_a_bad_spawn_is_named_by_file_line_and_field(repo, upstream, new, field, message):
    names = [s["name"] for s in yaml.safe_load((repo / "clusters/h200/scenarios.yaml").read_text())["scenarios"]]
    _refused(repo, upstream, SPAWN, new, names.index("developer-pod-two-spawns"), field, message)


def test_user_and_profile_are_for_spawns_only(repo, upstream):
    names = [s["name"] for s in yaml.safe_load((repo / "clusters/h200/scenarios.yaml").read_text())["scenarios"]]
    old = "{name: slice, kind: Pod, project: research, domain: development,"
    _refused(repo, upstream, old, old.replace("kind: Pod,", "kind: Pod, user: alice,"), names.index("mig-slices"),
             "steps[0].submit[0]", "`user` and `profile` are for `kind: spawn`")


def _refused(repo, upstream, old, new, scenario, field, message):
    path = repo / "clusters/h200/scenarios.yaml"
    text = path.read_text()
    assert old in text, old
    text = text.replace(old, new, 1)  # the first: in the scenario named by `scenario`
    path.write_text(text)
    result = forge(repo, "twin", "run", "h200", "--upstream", str(upstream))
    assert result.exit_code == 2, result.output
    line = line_of(text, new.splitlines()[0])
    assert f"clusters/h200/scenarios.yaml:{line}: scenarios[{scenario}].{field}: " in result.output, result.output
    assert message in result.output.lower() and "Traceback" not in result.output
    assert not (repo / "build/twin/h200").exists()


FLOWS = "scenarios[4].steps[0].flows"  # h200's network-flows


@pytest.mark.parametrize("old, new, field, message", [
    ("{from: {pod: prometheus}, to: {pod: scrape-targets}, allowed: true}",
     "{from: {pod: prometheus}, to: {pod: scrape-targets}, port: 9090, allowed: true}", f"{FLOWS}[18]",
     "give a port, except to scrape-targets and kubernetes-api"),
    ("{from: {pod: any}, to: {pod: dns}, port: 53, allowed: true}", "{from: {pod: any}, to: {pod: dnss}, port: 53, allowed: true}",
     f"{FLOWS}[17].to.pod", "input should be 'any', 'task',"),
    ("{from: {pod: any}, to: {pod: dns}, port: 53, allowed: true}", "{from: {pod: dns}, to: {pod: any}, port: 53, allowed: true}",
     f"{FLOWS}[17]", "any is a source only"),
    ("{from: {pod: any}, to: {pod: dns}, port: 53, allowed: true}", "{from: {pod: any}, to: {pod: dns}, port: 53, allowed: yes-please}",
     f"{FLOWS}[17].allowed", "input should be a valid boolean"),
])
def test_a_bad_flow_is_named_by_file_line_and_field(repo, upstream, old, new, field, message):
    path = repo / "clusters/h200/scenarios.yaml"
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))
    result = forge(repo, "twin", "run", "h200", "--upstream", str(upstream))
    assert result.exit_code == 2, result.output
    assert f"clusters/h200/scenarios.yaml:{line_of(text, old)}: {field}: " in result.output, result.output
    assert message in result.output.lower() and "Traceback" not in result.output
    assert not (repo / "build/twin/h200").exists()


@pytest.mark.parametrize("args, message", [
    (("run", "h200", "pretrain-whole-pol"), "clusters/h200/scenarios.yaml: no scenario named pretrain-whole-pol (have: pretrain-whole-pool,"),
    (("run", "h300"), "no cluster 'h300' (have: a100, h200, h200-burst)"),
    (("apply", "h200", "--upstream", "/nonexistent"), "--upstream /nonexistent: no such folder"),
])
def test_bad_arguments_say_what_to_change(repo, upstream, args, message):
    extra = () if "--upstream" in args else ("--upstream", str(upstream))
    result = forge(repo, "twin", *args, *extra)
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_without_the_upstream_data_the_box_refuses_to_start(repo, monkeypatch):
    monkeypatch.delenv("FORGE_UPSTREAM", raising=False)
    result = forge(repo, "twin", "apply", "h200")
    assert result.exit_code == 2
    assert "the box applies the CRDs each chart installs from the upstream chart data" in result.output
    assert not (repo / "build/twin").exists()


def test_a_cluster_without_scenarios_is_told_where_they_go(repo, upstream):
    (repo / "clusters/a100/scenarios.yaml").unlink()
    result = forge(repo, "twin", "run", "a100", "--upstream", str(upstream))
    assert result.exit_code == 2
    assert "clusters/a100/scenarios.yaml: no such file: the box has no scenarios for cluster a100 (docs/twin.md" in result.output


def test_a_rollout_step_names_a_node_and_a_known_test(tmp_path):
    """The scenario schema's rollout step (forge.twin.driver_rollout): a bad test name is refused
    with its line, like every other scenario field."""
    from forge.files.datafile import DataFileError
    from forge.twin.scenario import ScenarioFile, load_scenarios
    import forge.files.datafile as datafile
    path = tmp_path / "scenarios.yaml"
    path.write_text("scenarios:\n  - name: r\n    steps:\n      - rollout: {fail_node: n3, fail_test: memtest}\n")
    import pytest
    with pytest.raises(DataFileError) as err:
        datafile.load(path, ScenarioFile, "scenarios.yaml")
    assert "scenarios.yaml:4: scenarios[0].steps[0].rollout.fail_test" in str(err.value.problems[0])
    from tests.helpers import REPO
    [gated] = load_scenarios(REPO, "h200", ("driver-rollout-gated",))
    assert gated.steps[1].rollout is not None and gated.steps[1].rollout.fail_node == "h200-gpu-03"


def test_a_rollout_step_names_a_driver_the_upgrade_library_knows(tmp_path):
    """`driver` is k8s-operator-libs' driver name: gpu (the GPU Operator) or ofed (the Network
    Operator's DOCA driver); anything else is refused with its line."""
    from forge.files.datafile import DataFileError
    from forge.twin.scenario import ScenarioFile, load_scenarios
    import forge.files.datafile as datafile
    import pytest
    from tests.helpers import REPO
    path = tmp_path / "scenarios.yaml"
    path.write_text("scenarios:\n  - name: r\n    steps:\n      - rollout: {fail_node: n3, driver: nic}\n")
    with pytest.raises(DataFileError) as err:
        datafile.load(path, ScenarioFile, "scenarios.yaml")
    assert "scenarios.yaml:4: scenarios[0].steps[0].rollout.driver" in str(err.value.problems[0])
    [doca] = load_scenarios(REPO, "h200", ("doca-rollout-gated",))
    assert doca.steps[1].rollout is not None and doca.steps[1].rollout.driver == "ofed"


@pytest.mark.parametrize("command", ["argocd", "karpenter"])
def test_the_steps_on_a_running_box_say_to_start_one_first(repo, upstream, command):
    """`forge twin argocd` and `forge twin karpenter` act on a box that is up; without one they
    say what to run (exit 2) and start nothing."""
    name = "h200-burst" if command == "karpenter" else "a100"
    result = forge(repo, "twin", command, name, "--upstream", str(upstream))
    assert result.exit_code == 2, result.output
    assert f"error: no box of {name} is up: `forge twin up {name}` first" in result.output
    assert "Traceback" not in result.output and not (repo / f"build/twin/{name}").exists()
