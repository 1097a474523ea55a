"""`forge node add|remove|set`: every byte outside the edited node stays, invalid results are
refused with the loader's `file:line` and leave the file (and the overlays) untouched."""
from __future__ import annotations

import hashlib
from pathlib import Path

from tests.helpers import cli

H200 = "clusters/h200/inventory.yaml"


def lines_of(repo: Path, rel: str = H200) -> list[str]:
    return (repo / rel).read_text().splitlines(keepends=True)


def line_no(lines: list[str], text: str) -> int:
    """1-based number of the line that is exactly `text` (without its end)."""
    return next(i for i, line in enumerate(lines, 1) if line.rstrip("\n") == text)


def tree_hash(repo: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in (repo / "overlays").rglob("*") if p.is_file()):
        h.update(path.as_posix().encode() + path.read_bytes())
    return h.hexdigest()


def after_nodes(text: str) -> int:
    """Offset just past the last node (h200-gpu-18, whose last line is its MIG layout)."""
    last = "    mig_layout: all-1g\n"
    return text.index(last, text.index("  - name: h200-gpu-18\n")) + len(last)


def appended(text: str, node: str) -> str:
    """`text` with `node` inserted right after the last node (sections after it stay after it)."""
    end = after_nodes(text)
    return text[:end] + node + text[end:]


def with_expected(text: str, nodes: int, gpus: int) -> str:
    return text.replace("    gpu_nodes: 18\n    gpus: 144\n", f"    gpu_nodes: {nodes}\n    gpus: {gpus}\n", 1)


def add_expected(repo: Path, nodes: int = 18, gpus: int = 144) -> str:
    """Give the H200 inventory a `cluster.expected` block (the shipped one has none)."""
    text = (repo / H200).read_text().replace("  mig_layouts:\n", f"  expected:\n    gpu_nodes: {nodes}\n    gpus: {gpus}\n  mig_layouts:\n", 1)
    (repo / H200).write_text(text)
    return text


def test_add_a_19th_h200_node(repo):
    before = (repo / H200).read_text()
    result = cli("node", "add", "h200", "h200-gpu-19", "--profile", "sr680a-h200", "--rack", "h200-r05", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    # The node is appended after the last sr680a-h200 node (the file's last), in the neighbours'
    # layout; nothing else in the file changes.
    # Without --like a GPU node still takes its profile's NoSchedule taint (issue 24: it was left
    # open to every pod that asks for no GPU).
    assert (repo / H200).read_text() == appended(before, (
        "  - name: h200-gpu-19\n"
        "    profile: sr680a-h200\n"
        "    rack: h200-r05\n"
        "    roles: [gpu]\n"
        "    taints:\n"
        "      - {key: nvidia.com/gpu, effect: NoSchedule}\n"
    ))
    out = result.stdout.splitlines()
    assert out[0] == f"added h200-gpu-19 to clusters/h200/inventory.yaml after h200-gpu-18 (line {before[:after_nodes(before)].count(chr(10)) + 1})"
    assert out[1] == ("it carries h200-gpu-19 (profile sr680a-h200, rack h200-r05): 8 x H200-141GB GPUs (1128 GiB GPU memory); "
                      "4 NVMe devices = 12.8 TB NVMe cache capacity; NICs: 8 x connectx-7 (compute), 2 x bluefield-3 (storage)")
    assert out[2] == ("it takes the taint of its profile's GPU nodes: nvidia.com/gpu:NoSchedule "
                      "(drop with `forge node set ... --untaint KEY`)")
    assert not any("cluster.expected" in line for line in out)
    assert not any("note: every other sr680a-h200 node has taint" in line for line in out)
    assert (repo / "overlays/h200/node-feature-discovery/nodefeaturerule-forge-node-h200-gpu-19.yaml").is_file()
    assert cli("check", "--root", str(repo)).exit_code == 0


def test_add_refuses_a_rack_no_node_is_in_unless_new(repo):
    before = (repo / H200).read_text()
    nodes_line = line_no(lines_of(repo), "nodes:")
    result = cli("node", "add", "h200", "h200-gpu-19", "--profile", "sr680a-h200", "--rack", "h200-r5", "--root", str(repo))
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: {H200}:{nodes_line}: nodes: no node is in rack 'h200-r5' for --rack: did you mean 'h200-r05'? racks in use: "
        "h200-r01, h200-r02, h200-r03, h200-r04, h200-r05; a rack this cluster does not use yet needs --new-rack")
    assert (repo / H200).read_text() == before
    result = cli("node", "add", "h200", "h200-gpu-19", "--profile", "sr680a-h200", "--rack", "h200-r06", "--new-rack",
                 "--no-generate", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    assert "    rack: h200-r06\n" in (repo / H200).read_text()


def test_node_add_refuses_to_overwrite_a_hand_edit(repo):
    values = repo / "overlays/h200/loki/values.yaml"
    values.write_text(values.read_text() + "extra: by-hand\n")
    before = (repo / H200).read_text()
    result = cli("node", "add", "h200", "h200-gpu-19", "--profile", "sr680a-h200", "--rack", "h200-r05", "--root", str(repo))
    assert result.exit_code == 2
    assert "overlays/h200/loki/values.yaml: edited by hand since generate wrote it" in result.stderr
    assert (repo / H200).read_text() == before and "extra: by-hand" in values.read_text()


def test_add_keeps_cluster_expected_in_step_when_the_file_has_it(repo):
    before = add_expected(repo)
    result = cli("node", "add", "h200", "h200-gpu-19", "--profile", "sr680a-h200", "--rack", "h200-r05", "--no-generate", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    assert (repo / H200).read_text() == appended(with_expected(before, 19, 152), (
        "  - name: h200-gpu-19\n"
        "    profile: sr680a-h200\n"
        "    rack: h200-r05\n"
        "    roles: [gpu]\n"
        "    taints:\n"
        "      - {key: nvidia.com/gpu, effect: NoSchedule}\n"  # its profile's taint (issue 24)
    ))
    assert "cluster.expected.gpu_nodes: 18 -> 19 (kept in step with the node list)" in result.stdout.splitlines()


def test_add_with_labels_taints_and_layout_uses_the_neighbours_styles(repo):
    before = add_expected(repo)
    result = cli("node", "add", "h200", "h200-gpu-19", "--profile", "sr680a-h200", "--rack", "h200-r05",
                   "--label", "exa.ai/pool=interactive", "--taint", "nvidia.com/gpu:NoSchedule",
                   "--taint", "exa.ai/reserved=ml-infra:NoExecute", "--mig-layout", "all-1g", "--no-generate", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    assert (repo / H200).read_text() == appended(with_expected(before, 19, 152), (
        "  - name: h200-gpu-19\n"
        "    profile: sr680a-h200\n"
        "    rack: h200-r05\n"
        "    roles: [gpu]\n"
        "    labels:\n"
        "      exa.ai/pool: interactive\n"
        "    taints:\n"
        "      - {key: nvidia.com/gpu, effect: NoSchedule}\n"
        "      - {key: exa.ai/reserved, value: ml-infra, effect: NoExecute}\n"
        "    mig_layout: all-1g\n"
    ))
    assert result.stdout.splitlines()[-1] == "overlays not regenerated (--no-generate): run `make generate` before committing"


def test_add_in_the_middle_keeps_comments_around_it_byte_for_byte(repo):
    lines = lines_of(repo)
    # A comment heading the GPU nodes, an end-of-line comment and a comment inside a node.
    first_gpu = line_no(lines, "  - name: h200-gpu-01") - 1
    lines.insert(first_gpu, "  # GPU nodes: eight per rack, training pool first.\n")
    cp3 = line_no(lines, "  - name: h200-cp-03") - 1
    lines[cp3 + 2] = "    rack: h200-r03  # the rack with the spare PDU\n"
    lines.insert(cp3 + 3, "    # control-plane and system pods only\n")
    (repo / H200).write_text("".join(lines))

    result = cli("node", "add", "h200", "h200-cp-04", "--profile", "control-plane", "--rack", "h200-r04",
                   "--roles", "control-plane,system", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    after = lines_of(repo)
    at = line_no(after, "  - name: h200-cp-04") - 1
    inserted = ["  - name: h200-cp-04\n", "    profile: control-plane\n", "    rack: h200-r04\n", "    roles: [control-plane, system]\n"]
    assert after[at:at + 4] == inserted
    assert after[:at] + after[at + 4:] == lines  # a control-plane node: cluster.expected unchanged
    assert after[at + 4] == "  # GPU nodes: eight per rack, training pool first.\n"
    assert after[at - 2:at] == ["    # control-plane and system pods only\n", "    roles: [control-plane, system]\n"]
    assert result.stdout.splitlines()[0] == f"added h200-cp-04 to clusters/h200/inventory.yaml after h200-cp-03 (line {at + 1})"


def test_add_like_copies_roles_labels_taints_and_blank_line_style(repo):
    text = (repo / H200).read_text().replace("\n  - name: h200-", "\n\n  - name: h200-")  # nodes separated by blank lines
    (repo / H200).write_text(text)
    result = cli("node", "add", "h200", "h200-gpu-19", "--profile", "sr680a-h200", "--rack", "h200-r05",
                   "--like", "h200-gpu-18", "--no-generate", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    assert (repo / H200).read_text() == appended(with_expected(text, 19, 152), (
        "\n"
        "  - name: h200-gpu-19\n"
        "    profile: sr680a-h200\n"
        "    rack: h200-r05\n"
        "    roles: [gpu]\n"
        "    labels:\n"
        "      exa.ai/pool: interactive\n"
        "    taints:\n"
        "      - {key: nvidia.com/gpu, effect: NoSchedule}\n"
        "    mig_layout: all-1g\n"
    ))


def test_remove_reports_what_the_node_carried(repo):
    add_expected(repo)
    lines = lines_of(repo)
    start = line_no(lines, "  - name: h200-gpu-03") - 1
    result = cli("node", "remove", "h200", "h200-gpu-03", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    expected = with_expected("".join(lines[:start] + lines[start + 8:]), 17, 136)
    assert (repo / H200).read_text() == expected
    assert result.stdout.splitlines()[:5] == [
        f"removed h200-gpu-03 from clusters/h200/inventory.yaml (was line {start + 1})",
        "it carried h200-gpu-03 (profile sr680a-h200, rack h200-r01): 8 x H200-141GB GPUs (1128 GiB GPU memory); "
        "4 NVMe devices = 12.8 TB NVMe cache capacity; NICs: 8 x connectx-7 (compute), 2 x bluefield-3 (storage)",
        "cluster.expected.gpu_nodes: 18 -> 17 (kept in step with the node list)",
        "cluster.expected.gpus: 144 -> 136 (kept in step with the node list)",
        "h200 now has 17 GPU nodes with 136 GPUs",
    ]
    assert not (repo / "overlays/h200/node-feature-discovery/nodefeaturerule-forge-node-h200-gpu-03.yaml").exists()


def test_set_changes_only_the_lines_it_must(repo):
    lines = lines_of(repo)
    i = line_no(lines, "  - name: h200-gpu-17") - 1
    lines.insert(i + 4, "    # interactive nodes: developers' notebooks\n")
    (repo / H200).write_text("".join(lines))
    result = cli("node", "set", "h200", "h200-gpu-17", "--mig-layout", "none", "--rack", "h200-r04",
                   "--label", "exa.ai/pool=training", "--label", "exa.ai/owner=search", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    want = list(lines)
    want[i + 2] = "    rack: h200-r04\n"
    want[i + 6:i + 7] = ["      exa.ai/pool: training\n", "      exa.ai/owner: search\n"]
    assert want[i + 10] == "    mig_layout: all-1g\n"
    del want[i + 10]
    assert lines_of(repo) == want
    assert result.stdout.splitlines()[:4] == [
        "h200-gpu-17.rack: h200-r05 -> h200-r04", "h200-gpu-17.mig_layout: all-1g -> (the profile's)",
        "h200-gpu-17.labels.exa.ai/pool: interactive -> training", "h200-gpu-17.labels.exa.ai/owner: (unset) -> search",
    ]


def test_set_taints_and_roles(repo):
    lines = lines_of(repo)
    i = line_no(lines, "  - name: h200-gpu-01") - 1
    result = cli("node", "set", "h200", "h200-gpu-01", "--untaint", "nvidia.com/gpu", "--taint", "exa.ai/drain=true:NoExecute",
                   "--unlabel", "exa.ai/pool", "--no-generate", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    want = lines[:i + 4] + ["    taints:\n", "      - {key: exa.ai/drain, value: 'true', effect: NoExecute}\n"] + lines[i + 8:]
    assert lines_of(repo) == want


# ---- refusals: message, file:line, nothing written ----------------------------------------------

def refused(repo: Path, *args: str) -> str:
    before, overlays = (repo / H200).read_bytes(), tree_hash(repo)
    result = cli("node", *args, "--root", str(repo))
    assert result.exit_code == 2, result.stdout
    assert (repo / H200).read_bytes() == before
    assert tree_hash(repo) == overlays
    assert not list((repo / "clusters/h200").glob(".*forge-tmp"))
    return result.stderr


def test_refuses_an_unknown_mig_layout(repo):
    start = line_no(lines_of(repo), "  - name: h200-gpu-01")
    err = refused(repo, "set", "h200", "h200-gpu-01", "--mig-layout", "all-2g")
    assert err.splitlines() == [
        "error: the edit would make clusters/h200/inventory.yaml invalid, so it was not written (line numbers are those of the edited text):",
        f"clusters/h200/inventory.yaml:{start + 8}: nodes[3].mig_layout: unknown MIG layout 'all-2g' (expected one of: all-1g)",
    ]


def test_refuses_mig_on_a_node_without_gpus(repo):
    start = line_no(lines_of(repo), "  - name: h200-cp-02")
    err = refused(repo, "set", "h200", "h200-cp-02", "--mig-layout", "all-1g")
    assert (f"clusters/h200/inventory.yaml:{start + 4}: nodes[1].mig_layout: MIG layout set but profile 'control-plane' "
            "has no GPU, which cannot do MIG") in err


def test_refuses_a_reserved_taint_prefix(repo):
    start = line_no(lines_of(repo), "  - name: h200-gpu-02")
    err = refused(repo, "set", "h200", "h200-gpu-02", "--taint", "node.kubernetes.io/foo:NoSchedule")
    assert (f"clusters/h200/inventory.yaml:{start + 8}: nodes[4].taints[1].key: 'node.kubernetes.io/foo' uses the reserved "
            "prefix 'node.kubernetes.io'; use your own domain") in err


def test_refuses_a_duplicate_an_unknown_profile_and_an_unknown_node(repo):
    lines = lines_of(repo)
    err = refused(repo, "add", "h200", "h200-gpu-05", "--profile", "sr680a-h200", "--rack", "h200-r02")
    assert err.splitlines() == [f"error: clusters/h200/inventory.yaml:{line_no(lines, '  - name: h200-gpu-05')}: "
                                "node 'h200-gpu-05' already exists; use `forge node set` to change it"]
    err = refused(repo, "add", "h200", "h200-gpu-19", "--profile", "sr999", "--rack", "h200-r02")
    assert err.splitlines() == [f"error: clusters/h200/inventory.yaml:{line_no(lines, 'profiles:')}: profiles: no profile 'sr999' "
                                "for --profile (expected one of: sr680a-h200, control-plane)"]
    err = refused(repo, "remove", "h200", "h200-gpu-99")
    assert err.startswith(f"error: clusters/h200/inventory.yaml:{line_no(lines, 'nodes:')}: nodes: no node named 'h200-gpu-99' "
                          "(nodes: h200-cp-01, h200-cp-02,")


def test_refuses_to_edit_an_inventory_that_is_already_invalid(repo):
    add_expected(repo, gpus=140)
    err = refused(repo, "set", "h200", "h200-gpu-01", "--rack", "h200-r02")
    line = line_no(lines_of(repo), "    gpus: 140")
    assert err.splitlines() == [
        "error: clusters/h200/inventory.yaml is not valid now; fix it before editing it with forge node:",
        f"clusters/h200/inventory.yaml:{line}: cluster.expected.gpus: expected 140 GPUs, the nodes' profiles add up to 144",
    ]


def test_a_failed_regeneration_puts_the_inventory_back(repo):
    a100 = repo / "clusters/a100/inventory.yaml"
    a100.write_text(a100.read_text().replace("    rack: a100-r01\n", "    rack: A100_R01\n", 1))
    line = line_no(lines_of(repo, "clusters/a100/inventory.yaml"), "    rack: A100_R01")
    err = refused(repo, "set", "h200", "h200-gpu-01", "--rack", "h200-r02")
    assert "regeneration failed: clusters/h200/inventory.yaml was put back as it was" in err
    assert f"clusters/a100/inventory.yaml:{line}: nodes[0].rack: 'A100_R01' is not a valid name: names are DNS labels" in err


def test_bad_option_syntax(repo):
    err = refused(repo, "add", "h200", "h200-gpu-19", "--profile", "sr680a-h200", "--rack", "h200-r05", "--taint", "nvidia.com/gpu")
    assert err.splitlines() == ["error: --taint 'nvidia.com/gpu': expected key[=value]:Effect (e.g. nvidia.com/gpu:NoSchedule)"]
    err = refused(repo, "set", "h200", "h200-gpu-01")
    assert err.startswith("error: nothing to set: give at least one of --profile, --rack")


def test_a_node_added_at_the_end_goes_before_the_next_sections_comment(repo):
    text = (repo / H200).read_text()
    end = after_nodes(text)
    if "\ncomponents:" not in text:  # a section after the nodes, headed by a comment
        text += "\n# Per-component settings (see README).\ncomponents: {}\n"
    else:
        text = text[:end] + "\n# Per-component settings (see README).\n" + text[end:]
    (repo / H200).write_text(text)
    result = cli("node", "add", "h200", "h200-gpu-19", "--profile", "sr680a-h200", "--rack", "h200-r05", "--no-generate", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    want = with_expected(text, 19, 152)
    new_node = ("  - name: h200-gpu-19\n    profile: sr680a-h200\n    rack: h200-r05\n    roles: [gpu]\n"
                "    taints:\n      - {key: nvidia.com/gpu, effect: NoSchedule}\n")
    assert (repo / H200).read_text() == want[:end] + new_node + want[end:]
    assert want[end:].startswith("\n# Per-component settings (see README).\n")


def test_editing_a_cluster_with_a_burst_link_reads_the_burst_inventory_under_root(repo, tmp_path, monkeypatch):
    """h200 names its burst cluster (components.kueue.burst); the edit's checks read
    clusters/h200-burst/inventory.yaml under --root, whatever the working folder."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # clusters/ relative to here does not exist
    result = cli("node", "remove", "h200", "h200-gpu-03", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    assert "  - name: h200-gpu-03\n" not in (repo / H200).read_text()
