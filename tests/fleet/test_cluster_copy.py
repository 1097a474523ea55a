"""A new cluster from an old one (issue 24, wall 8): two clusters sharing a bucket they write, a
host, an Argo CD project or overlapping rail CIDRs are refused with both places named, and
`forge cluster new NAME --from CLUSTER` copies an inventory with all of those renamed."""
from __future__ import annotations

from pathlib import Path

from tests.helpers import forge, line_of


def naive_copy(root: Path, name: str = "h300") -> tuple[str, str]:
    """What people did: copy the folder, change the cluster name and the node names only."""
    text = (root / "clusters/h200/inventory.yaml").read_text()
    copied = text.replace("  name: h200\n", f"  name: {name}\n", 1).replace("  - name: h200-", f"  - name: {name}-")
    (root / f"clusters/{name}").mkdir()
    (root / f"clusters/{name}/inventory.yaml").write_text(copied)
    return text, copied


def test_a_naive_copy_is_refused_naming_both_places(repo_inputs: Path):
    original, copied = naive_copy(repo_inputs)
    result = forge(repo_inputs, "generate")
    assert result.exit_code == 2
    out = result.output
    h200 = "clusters/h200/inventory.yaml"
    mine = "error: clusters/h300/inventory.yaml"
    assert (f"{mine}:{line_of(copied, 'loki: exa-loki-h200')}: cluster.s3.buckets.loki: bucket 'exa-loki-h200' is also "
            f"cluster 'h200''s ({h200}:{line_of(original, 'loki: exa-loki-h200')}): two clusters must not share a bucket") in out
    assert f"bucket 'exa-flyte-h200' is also cluster 'h200''s" in out
    assert f"{mine}:{line_of(copied, 'project: forge-h200')}: cluster.argocd.project: Argo CD project 'forge-h200'" in out
    assert "components.flyte.ingress.host: host 'flyte.h200.exa.internal' is also cluster 'h200''s" in out
    assert "components.flyte.database.host: host 'flyte-h200.db.exa.internal'" in out
    assert "components.flyte.grafana_url: host 'grafana.h200.exa.internal'" in out
    assert (f"{mine}:{line_of(copied, 'cidr: 10.128.0.0/22')}: cluster.network.compute.rails[0].cidr: 10.128.0.0/22 overlaps "
            f"10.128.0.0/22 of cluster 'h200' ({h200}:{line_of(original, 'cidr: 10.128.0.0/22')})") in out
    assert "datasets" not in out  # the shared read-only bucket may be shared
    assert not (repo_inputs / "overlays/h300").exists()


def test_an_overlapping_cidr_of_another_size_is_refused(repo_inputs: Path):
    _, copied = naive_copy(repo_inputs)
    fixed = forge_fixed(copied).replace("cidr: 10.128.36.0/22", "cidr: 10.128.24.0/21")
    (repo_inputs / "clusters/h300/inventory.yaml").write_text(fixed)
    result = forge(repo_inputs, "generate")
    assert result.exit_code == 2
    lines = [l for l in result.output.splitlines() if l.startswith("error: clusters/")]
    assert len(lines) == 1 and "rails[1].cidr: 10.128.24.0/21 overlaps 10.128.24.0/22 of cluster 'h200'" in lines[0], result.output


def forge_fixed(text: str) -> str:
    """The copy with everything unique renamed by hand but the CIDRs moved to 10.128.32.0/19."""
    for old, new in (("exa-ml-checkpoints-h200", "exa-ml-checkpoints-h300"), ("exa-flyte-h200", "exa-flyte-h300"),
                     ("exa-loki-h200", "exa-loki-h300"), ("forge-h200", "forge-h300"), ("h200.exa.internal", "h300.exa.internal"),
                     ("flyte-h200.db", "flyte-h300.db"), ("exa-alluxio-backups-h200", "exa-alluxio-backups-h300")):
        text = text.replace(old, new)
    for i in range(8):
        text = text.replace(f"cidr: 10.128.{4 * i}.0/22", f"cidr: 10.128.{32 + 4 * i}.0/22")
    return text


def test_cluster_new_copies_with_every_unique_name_renamed(repo_inputs: Path):
    assert forge(repo_inputs, "generate").exit_code == 0
    result = forge(repo_inputs, "cluster", "new", "h300", "--from", "h200")
    assert result.exit_code == 0, result.output
    text = (repo_inputs / "clusters/h300/inventory.yaml").read_text()
    assert text.startswith("# Copied from clusters/h200/inventory.yaml by `forge cluster new h300 --from h200`")
    for expected in ("  name: h300\n", "project: forge-h300", "loki: exa-loki-h300", "flyte: exa-flyte-h300",
                     "host: flyte.h300.exa.internal", "host: flyte-h300.db.exa.internal", "grafana.h300.exa.internal",
                     "  - name: h300-gpu-01\n", "rack: h300-r01", "cidr: 10.128.32.0/22", "datasets: exa-ml-datasets",
                     "profile: sr680a-h200"):  # hardware names stay
        assert expected in text, expected
    assert "  cluster.s3.buckets.loki: exa-loki-h200 -> exa-loki-h300" in result.output
    assert "  cluster.network.compute.rails.0.cidr: 10.128.0.0/22 -> 10.128.32.0/22" in result.output
    assert (repo_inputs / "overlays/h300/loki/values.yaml").is_file()
    assert forge(repo_inputs, "check").exit_code == 0
    # Comments stay: only the renamed values differ, line by line.
    original = (repo_inputs / "clusters/h200/inventory.yaml").read_text().splitlines()
    assert sum(a != b for a, b in zip(original, text.splitlines()[1:])) < 60 and len(original) == len(text.splitlines()) - 1

    # A second copy takes the next free CIDR block.
    assert forge(repo_inputs, "cluster", "new", "h400", "--from", "h200", "--no-generate").exit_code == 0
    assert "cidr: 10.128.64.0/22" in (repo_inputs / "clusters/h400/inventory.yaml").read_text()


def test_cluster_new_bad_input(repo_inputs: Path):
    result = forge(repo_inputs, "cluster", "new", "h300", "--from", "h900")
    assert result.exit_code == 2 and result.output.strip() == (
        "error: --from h900: no clusters/h900/inventory.yaml (clusters: a100, h200, h200-burst)")
    result = forge(repo_inputs, "cluster", "new", "a100", "--from", "h200")
    assert result.exit_code == 2 and "clusters/a100/: already exists" in result.output
    result = forge(repo_inputs, "cluster", "new", "H_300", "--from", "h200")
    assert result.exit_code == 2 and "cluster name 'H_300': lower-case letters" in result.output
    assert not (repo_inputs / "clusters/h300").exists()
