"""The box fails where forge's output is wrong, and says where: the floor() quotas of old keep the
16-node pre-train out (the queue and the shortfall named), a CEL violation planted in one rendered
object makes `forge twin apply` fail naming the file, the object and the rule."""
from __future__ import annotations


from pathlib import Path

import yaml

from forge.fleet import load_fleet
from forge.render.overlays import render_all
from forge.twin.box import running_box
from forge.twin.controllers import Controllers
from forge.twin.kube import connect
from forge.twin.pins import argocd_crds_dir
from forge.twin.pki import Pki
from forge.twin.run import Runner
from forge.twin.scenario import load_scenarios
from forge.twin.sources import applications
from forge.twin.submit import Propeller
from forge.twin.tasks import resolve
from forge.twin.sync import Syncer
from tests.helpers import edit, forge, git_repo_copy, regenerate
from tests.twin.conftest import say


def floor_quotas(amount: int, percents: list[int]) -> list[int]:
    """What forge did before: each share rounded down on its own."""
    return [amount * p // 100 for p in percents]


def test_floor_quotas_keep_the_whole_pool_pretrain_out_naming_the_queue_and_the_shortfall(tmp_path, box_programs, upstream,
                                                                                         monkeypatch):
    root = git_repo_copy(tmp_path / "repo")
    monkeypatch.setattr("forge.model.queues.largest_remainder", floor_quotas)
    # The static check refuses these quotas first (as it should); lift it to watch what Kueue does.
    for cluster in ("h200", "a100"):
        inventory = root / f"clusters/{cluster}/inventory.yaml"
        inventory.write_text(edit(inventory.read_text(), "  kueue:\n    projects:", "  kueue:\n    whole_pool_projects: []\n    projects:"))
    burst = root / "clusters/h200-burst/inventory.yaml"  # h200's burst cluster, read with h200: its queues too
    burst.write_text(edit(burst.read_text(), "  kueue: {}", "  kueue: {whole_pool_projects: []}"))
    regenerate(root)
    render_all(root)
    training = yaml.safe_load((root / "overlays/h200/kueue/clusterqueue-training.yaml").read_text())
    assert training["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] == "64"
    plan = next(p for p in load_fleet(root) if p.name == "h200")
    scenario = next(s for s in resolve(root, load_scenarios(root, "h200")) if s.name == "pretrain-whole-pool")
    scenario = scenario.model_copy(update={"steps": [scenario.steps[0].model_copy(update={"within": 20})]})
    with running_box(root, plan, upstream, say) as state:
        pki = Pki(root / "build/twin/h200/pki")
        kube = connect(state.server, pki.token(), pki.ca)
        report = Syncer(kube, Controllers.wiring_for(state.kueue_webhook_port), say).sync(
            applications(root, plan, upstream, argocd_crds_dir(root, upstream)))
        assert report.refused == []
        outcome = Runner(kube, plan, Propeller.from_values(root / "overlays/h200/flyte/values.yaml"), say).run(scenario)
    assert not outcome.passed
    message = "\n".join(outcome.lines)
    assert "job pretrain: 0 of 1 admitted, want 1 (ClusterQueue training:" in message
    assert "insufficient quota for nvidia.com/gpu in flavor h200-141gb" in message
    # the shortfall per flavor is named: the compiled pre-train's Master pod set (8 GPUs) is the first refused
    assert "short: h200-141gb-all-1g nvidia.com/gpu 8" in message, message


def test_a_cel_violation_in_a_rendered_object_fails_apply_naming_file_object_and_rule(box_programs, tmp_path, upstream):
    root = git_repo_copy(tmp_path / "repo")
    render_all(root)
    rendered = root / "build/rendered/h200/kueue.yaml"
    text = rendered.read_text()
    # A ClusterQueue with borrowing limits but no cohort: Kueue's CRD refuses it by a CEL rule.
    start = text.index("kind: ClusterQueue")
    cohort = text.index("  cohortName: forge\n", start)
    rendered.write_text(text[:cohort] + text[cohort + len("  cohortName: forge\n"):])
    line = text[:start].count("\n")  # the object starts a line above its kind
    result = forge(root, "twin", "apply", "h200", "--upstream", str(upstream), "--no-render")
    assert result.exit_code == 1, result.output
    refused = [ln for ln in result.output.splitlines() if ln.startswith("refused: ")]
    assert len(refused) == 1, result.output
    assert refused[0].startswith(f"refused: build/rendered/h200/kueue.yaml:{line}: ClusterQueue embeddings (Application h200-kueue)")
    assert "borrowingLimit must be nil when cohort is empty" in refused[0]
    assert not (root / "build/twin/h200").exists()  # the box of the command is gone with it


def _stopped(root: Path) -> bool:
    return not (root / "build/twin/h200").exists()
