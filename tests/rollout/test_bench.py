"""`forge bench`'s rollout lines over a (small) synthetic fleet: the ApplicationSets rendered for
every cluster, and one promotion decision judging every cluster over real HTTP on 127.0.0.1."""
from __future__ import annotations

from forge.bench.pipeline import synthesize_fleet
from forge.rollout.bench import bench_rollout
from tests.helpers import REPO


def test_bench_times_the_application_sets_and_a_promotion_decision(tmp_path, capsys):
    synthesize_fleet(REPO, tmp_path, nodes=2, clusters=3)
    bench_rollout(tmp_path, "[t]")
    lines = capsys.readouterr().out.splitlines()
    # One ApplicationSet per component the H200 template enables (JupyterHub's included): 15.
    assert lines[0].startswith("[t] ApplicationSets: ") and "15 ApplicationSets, 3 cluster Secrets" in lines[0]
    assert lines[1].startswith("[t] promotion decision over 3 clusters: ") and lines[1].endswith("(15 API calls; passes)")
    rings = {p.parent.name: p.read_text().count("ring: canary") for p in tmp_path.glob("clusters/*/inventory.yaml")}
    assert rings == {"synth00": 1, "synth01": 0, "synth02": 0}
