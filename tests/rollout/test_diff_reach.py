"""`forge diff` says which ring each change reaches first: the changed clusters by the ring
their inventory names, in clusters/rings.yaml's order."""
from __future__ import annotations

from forge.diff import diff_against
from forge.diff.report import markdown, text
from forge.diff.rings import NO_RING, reach
from tests.helpers import commit, edit, regenerate


def test_a_chart_bump_reaches_the_canary_first_then_the_fleet(repo, kustomize):
    versions = repo / "charts/versions.yaml"
    versions.write_text(versions.read_text().replace("version: v26.7.0", "version: v26.8.0"))
    regenerate(repo)
    commit(repo, "gpu-operator v26.8.0")
    report = diff_against(repo, "HEAD~1")
    # h200-burst, the h200 fleet's cloud burst cluster, is in the fleet ring with it.
    assert report.reach == [("canary", ["a100"]), ("fleet", ["h200", "h200-burst"])]
    assert "\nreaches first: canary (a100), then fleet (h200, h200-burst)\n" in text(report)
    assert "Rollout: reaches first: canary (a100), then fleet (h200, h200-burst)." in markdown(report)


def test_a_cluster_without_a_ring_is_reached_on_merge_before_any_ring(repo):
    inventory = repo / "clusters/h200/inventory.yaml"
    text_ = inventory.read_text()
    start = text_.index("  # Rollout (docs/rollout.md)")
    inventory.write_text(text_[:start] + text_[text_.index("  s3:\n"):])
    assert reach(repo, ["a100", "h200"]) == [(NO_RING, ["h200"]), ("canary", ["a100"])]
    rings = repo / "clusters/rings.yaml"
    rings.write_text(edit(rings.read_text(), "  - name: canary\n", "  - name: early\n    soak_minutes: 5\n  - name: canary\n"))
    assert reach(repo, ["a100"]) == [("canary", ["a100"])]
