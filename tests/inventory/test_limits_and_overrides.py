"""Issue 26, limits and silent overrides: each refused with file:line, saying what is allowed."""
from __future__ import annotations

import pytest

from tests.helpers import H200_FILE, edit, inventory_text, line_of, problems

H200 = inventory_text("h200")
NODE_18 = "  - name: h200-gpu-18\n"


def _many_nodes(count: int) -> str:
    extra = "".join(f"  - {{name: n{i:05d}, profile: control-plane, rack: h200-r01, roles: [system]}}\n"
                    for i in range(count))
    return edit(H200, NODE_18, extra + NODE_18)


def test_more_nodes_than_kubernetes_supports_are_refused_at_the_list():
    text = _many_nodes(5000)
    found = problems(text)
    assert f"{H200_FILE}:{line_of(text, 'nodes:', whole=True)}: nodes: 5,021 nodes: Kubernetes supports at most 5,000" in found[0], found[:2]


@pytest.mark.parametrize("mount,words", [
    ("/mnt/../etc", "climbs with '..'"),
    ("/mnt//nvme9/", "not in normal form: write '/mnt/nvme9'"),
    ("/etc/nvme", "system folder"),
])
def test_an_nvme_mount_is_a_plain_folder_of_its_own(mount, words):
    text = edit(H200, "mount: /mnt/nvme3}", f"mount: {mount}}}")
    (p,) = [p for p in problems(text) if ".nvme[3].mount" in p]
    assert p.startswith(f"{H200_FILE}:{line_of(text, mount + '}')}:") and words in p, p


def test_two_spellings_of_one_mount_are_refused():
    text = edit(H200, "mount: /mnt/nvme3}", "mount: /mnt//nvme0/}")
    assert any(".nvme[3].mount" in p and "normal form" in p for p in problems(text))


def test_a_hand_mig_config_label_that_disagrees_with_the_layout_is_refused():
    old = "    labels:\n      exa.ai/pool: interactive\n    taints:\n      - {key: nvidia.com/gpu, effect: NoSchedule}\n    mig_layout: all-1g\n  - name: h200-gpu-18"
    text = edit(H200, old, old.replace("exa.ai/pool: interactive\n", "exa.ai/pool: interactive\n      nvidia.com/mig.config: all-disabled\n", 1))
    (p,) = [p for p in problems(text) if "mig.config" in p]
    assert p.startswith(f"{H200_FILE}:{line_of(text, 'nvidia.com/mig.config: all-disabled')}:")
    assert "disagrees with the node's MIG layout (all-1g)" in p


def test_a_mig_config_label_equal_to_the_layout_is_fine():
    old = "    labels:\n      exa.ai/pool: interactive\n    taints:\n      - {key: nvidia.com/gpu, effect: NoSchedule}\n    mig_layout: all-1g\n  - name: h200-gpu-18"
    text = edit(H200, old, old.replace("exa.ai/pool: interactive\n", "exa.ai/pool: interactive\n      nvidia.com/mig.config: all-1g\n", 1))
    from forge.fleet import load_plan_text

    load_plan_text(text, H200_FILE)


def test_too_many_labels_on_a_node_are_refused():
    labels = "".join(f"      exa.ai/l{i}: v\n" for i in range(101))
    text = edit(H200, "      exa.ai/pool: interactive\n    taints:\n      - {key: nvidia.com/gpu, effect: NoSchedule}\n    mig_layout: all-1g\n  - name: h200-gpu-18",
                "      exa.ai/pool: interactive\n" + labels + "    taints:\n      - {key: nvidia.com/gpu, effect: NoSchedule}\n    mig_layout: all-1g\n  - name: h200-gpu-18")
    assert any("102 labels: at most 100 per node" in p for p in problems(text))


def test_a_cluster_name_too_long_for_argo_cds_instance_label_is_refused():
    long = "h" * 60
    text = H200.replace("  name: h200\n", f"  name: {long}\n", 1)
    p = next(p for p in problems(text) if "Argo CD Application" in p)
    assert p.startswith(f"{H200_FILE}:{line_of(text, f'  name: {long}')}: cluster.name:") and "at most 63" in p


def test_a_project_too_long_for_its_bootstrap_project_is_refused():
    text = edit(H200, "project: forge-h200", "project: " + "p" * 60)
    assert any("cluster.argocd.project" in p and "at most 53 characters" in p for p in problems(text))


def test_an_object_larger_than_argo_cds_apply_allows_is_refused_naming_the_inventory(tmp_path, monkeypatch):
    """The guard behind the per-node label cap: any object forge writes itself. The limit is
    lowered here so a shipped fleet's largest client-side-applied object crosses it."""
    from forge.generate import tree as generate
    from forge.errors import InventoryError
    from tests.helpers import copy_repo_inputs

    root = copy_repo_inputs(tmp_path / "repo")
    monkeypatch.setattr(generate, "MAX_OBJECT_BYTES", 4096)
    monkeypatch.setattr(generate, "MAX_SSA_OBJECT_BYTES", 4096)
    with pytest.raises(InventoryError) as caught:
        generate.build_tree(root)
    (p,) = caught.value.problems
    assert p.file.startswith("clusters/") and p.line == 1
    assert "Argo CD applies it" in p.message and "at most 4 KiB" in p.message
