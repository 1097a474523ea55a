"""`forge diff` flags a change to a project's Kueue nominal quota (risk `queue`), raised or lowered,
end to end: an inventory share edited in a throwaway repo, regenerated, diffed against HEAD."""
from __future__ import annotations

from forge.diff import diff_against

from tests.helpers import forge, regenerate


def test_share_change_flags_the_nominal_quotas_it_moves(repo, kustomize):
    inventory = repo / "clusters/a100/inventory.yaml"
    text = inventory.read_text()
    text = text.replace("{name: training, share_percent: 40,", "{name: training, share_percent: 30,")
    text = text.replace("{name: research, share_percent: 10,", "{name: research, share_percent: 20,")
    inventory.write_text(text)
    regenerate(repo)
    report = diff_against(repo, "HEAD")
    flags = {f.message.split(":")[0]: f for f in report.flags if f.kind == "queue"}
    assert set(flags) == {"nominal quota of project queue training changed", "nominal quota of project queue research changed"}
    training = flags["nominal quota of project queue training changed"]
    assert (training.level, training.cluster, training.component) == ("medium", "a100", "kueue")
    # 72 whole GPUs; training, a whole-pool project, also holds the 20 % of embeddings (ranked below it:
    # nominal 0 on whole-GPU pools): x 60 % (43.2) -> x 50 % (36), by largest remainder
    assert "a100-80gb/nvidia.com/gpu 43 -> 36" in training.message
    assert "a100-80gb/nvidia.com/gpu 7 -> 14" in flags["nominal quota of project queue research changed"].message
    assert not [f for f in report.flags if f.kind == "queue" and f.cluster == "h200"]
    md = forge(repo, "diff", "--base", "HEAD", "--format", "markdown")
    assert md.exit_code == 1 and "nominal quota of project queue training changed" in md.stdout
