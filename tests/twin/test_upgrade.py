"""An upgrade played on the box: the base revision's output, then the working tree's over it. A
taint added to a pool's nodes changes its ResourceFlavor's tolerations, which Kueue's CRD refuses
to change once the flavor has a topology (a CEL transition rule): Argo CD could never sync it.
The box says so, and `forge diff` shows it first, as HIGH."""
from __future__ import annotations

from tests.helpers import commit, edit, forge, git_repo_copy, regenerate

GPU_TAINT = "      - {key: nvidia.com/gpu, effect: NoSchedule}\n"


def test_an_immutable_flavor_change_is_refused_on_upgrade_and_diff_shows_it_as_high(tmp_path, box_programs, upstream):
    root = git_repo_copy(tmp_path / "repo")
    inventory = root / "clusters/h200/inventory.yaml"
    text = inventory.read_text()
    inventory.write_text(edit(text, GPU_TAINT, GPU_TAINT + "      - {key: exa.ai/reserved, value: training, effect: NoSchedule}\n",
                              count=text.count(GPU_TAINT)))
    regenerate(root)
    result = forge(root, "twin", "upgrade", "h200", "--base", "HEAD", "--upstream", str(upstream))
    assert result.exit_code == 1, result.output
    refused = [ln for ln in result.output.splitlines() if ln.startswith("refused on upgrade: ")]
    assert refused and all("ResourceFlavor h200-141gb" in ln or "ResourceFlavor h200-141gb-all-1g" in ln for ln in refused), refused
    assert "build/rendered/h200/kueue.yaml:" in refused[0] and "Application h200-kueue" in refused[0]
    assert "tolerations" in refused[0]  # the CEL rule's own words name the field
    assert not (root / "build/twin/h200").exists()

    report = forge(root, "diff", "--base", "HEAD")
    lines = report.output.splitlines()
    first_risk = next(ln for ln in lines if "HIGH" in ln.upper() and "refuses this upgrade" in ln)
    assert "ResourceFlavor h200-141gb" in first_risk
    risks = [ln for ln in lines if "refuses this upgrade" in ln]
    assert lines.index(first_risk) == min(lines.index(r) for r in risks)

    # Committed, the working tree moved on: the result no longer describes the change, and diff says so.
    commit(root, "reserved taint")
    inventory.write_text(inventory.read_text().replace("value: training", "value: research"))
    regenerate(root)
    stale = forge(root, "diff", "--base", "HEAD~1").output
    assert "refuses this upgrade" not in stale and "the generated files changed since the box's upgrade result" in stale
