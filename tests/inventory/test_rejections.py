"""Every class of bad inventory gets its message, its file:line and its field path.

Each case edits the shipped H200 inventory the way a careless pull request would, then asserts
the exact problem line the user sees. Line numbers are computed from the edited text, so the
cases keep working as the shipped inventory grows.
"""
from __future__ import annotations

import pytest

from tests.helpers import H200_FILE as FILE
from tests.helpers import inventory_text, line_of, problems

EXPECTED = "  expected:\n    gpu_nodes: 18\n    gpus: 144\n"


def edit(old: str, new: str, count: int = 1) -> str:
    # The shipped inventory has no `cluster.expected`; the cases below give it the right one, so
    # a capacity that stops adding up is reported too.
    text = inventory_text("h200").replace("  mig_layouts:\n", EXPECTED + "  mig_layouts:\n", 1)
    assert old in text, f"the shipped inventory changed: {old!r} not found"
    return text.replace(old, new, count)


def test_duplicate_node_name():
    text = edit("  - name: h200-gpu-02\n", "  - name: h200-gpu-01\n")
    first = line_of(text, "name: h200-gpu-01", 1)
    second = line_of(text, "name: h200-gpu-01", 2)
    assert problems(text) == [f"{FILE}:{second}: nodes[4].name: duplicate node name 'h200-gpu-01' (first defined at line {first})"]


def test_unknown_gpu_model():
    text = edit("model: H200-141GB", "model: H300-141GB")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'H300')}: profiles.sr680a-h200.gpu.model: unknown GPU model 'H300-141GB' "
        "(did you mean: H200-141GB, H100-80GB, A100-40GB?; known: A100-40GB, A100-80GB, B200, H100-80GB, H100-NVL, H200-141GB, L40S-48GB)"]


def test_unknown_nic_model():
    text = edit("model: connectx-7", "model: connectx-9")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'connectx-9')}: profiles.sr680a-h200.nics[0].model: unknown NIC model 'connectx-9' "
        "(did you mean: connectx-7, connectx-6, connectx-6-dx?; known: bluefield-2, bluefield-3, connectx-6, connectx-6-dx, connectx-7, intel-e810)"]


def test_mig_profile_the_gpu_cannot_do():
    text = edit("{1g.18gb: 7}", "{1g.10gb: 7}")
    assert problems(text) == [
        f"{FILE}:{line_of(text, '1g.10gb')}: cluster.mig_layouts.all-1g[0].profiles.1g.10gb: MIG profile '1g.10gb' "
        "does not exist on H200-141GB (node h200-gpu-17); expected one of: 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb"]


def test_mig_layout_that_overfills_a_gpu():
    text = edit("{1g.18gb: 7}", "{3g.71gb: 2, 2g.35gb: 1}")
    line = line_of(text, "3g.71gb")
    assert problems(text) == [
        f"{FILE}:{line}: cluster.mig_layouts.all-1g[0].profiles: profiles need 8/7 compute and 10/8 memory slices "
        "per GPU on H200-141GB (node h200-gpu-17): more than one GPU has"]


def test_mig_layout_on_a_gpu_index_the_node_lacks():
    text = edit("      - gpus: all\n", "      - gpus: [0, 8]\n")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'gpus: [0, 8]')}: cluster.mig_layouts.all-1g[0].gpus: GPU index 8 does not exist "
        "on H200-141GB (node h200-gpu-17): it has GPUs 0-7"]


def test_mig_layout_on_a_node_without_mig():
    text = edit("    roles: [control-plane, system]\n", "    roles: [control-plane, system]\n    mig_layout: all-1g\n")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'mig_layout: all-1g', 1)}: nodes[0].mig_layout: MIG layout set but profile "
        "'control-plane' has no GPU, which cannot do MIG"]


def test_unknown_mig_layout_name():
    text = edit("mig_layout: all-1g", "mig_layout: all-2g")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'all-2g')}: nodes[19].mig_layout: unknown MIG layout 'all-2g' (expected one of: all-1g)"]


def test_gpu_capacity_does_not_add_up():
    text = edit("gpus: 144", "gpus: 150")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'gpus: 150')}: cluster.expected.gpus: expected 150 GPUs, the nodes' profiles add up to 144"]


def test_interfaces_do_not_match_card_count():
    text = edit("        count: 8\n", "        count: 7\n")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'interfaces: [enp26s0np0')}: profiles.sr680a-h200.nics[0].interfaces: "
        "7 card(s) x 1 port(s) = 7 interfaces expected, 8 listed"]


def test_port_faster_than_the_nic():
    text = edit("        port_gbps: 400\n", "        port_gbps: 800\n")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'port_gbps: 800')}: profiles.sr680a-h200.nics[0].port_gbps: connectx-7 ports run at most 400 Gb/s, not 800"]


def test_interface_shared_by_two_nics():
    text = edit("[enp41s0f0np0, enp170s0f0np0]", "[enp41s0f0np0, enp26s0np0]")
    assert problems(text) == [
        f"{FILE}:{line_of(text, '[enp41s0f0np0, enp26s0np0]')}: profiles.sr680a-h200.nics[1].interfaces[1]: "
        "interface 'enp26s0np0' is already used by nics[0] of this profile"]


def test_unknown_profile_reports_every_problem_at_once():
    text = edit("    profile: sr680a-h200\n", "    profile: sr680\n")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'gpu_nodes: 18')}: cluster.expected.gpu_nodes: expected 18 GPU nodes, the node list has 17",
        f"{FILE}:{line_of(text, 'gpus: 144')}: cluster.expected.gpus: expected 144 GPUs, the nodes' profiles add up to 136",
        f"{FILE}:{line_of(text, 'profile: sr680', 1)}: nodes[3].profile: unknown profile 'sr680' (expected one of: control-plane, sr680a-h200)",
    ]


def test_unknown_key_lists_the_expected_ones():
    text = edit("    cpu_threads: 192\n", "    cpu_threads: 192\n    cpu_cores: 96\n")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'cpu_cores')}: profiles.sr680a-h200.cpu_cores: unknown key 'cpu_cores' "
        "(expected one of: server, cpu_threads, memory_gib, gpu, nics, nvme, mig_layout)"]


@pytest.mark.parametrize(("old", "new", "needle", "path", "message"), [
    ("cpu_threads: 192", "cpu_threads: lots", "lots", "profiles.sr680a-h200.cpu_threads", "expected an integer, got string 'lots'"),
    ('kubernetes_version: "1.34"', "kubernetes_version: 1.34", "kubernetes_version", "cluster.kubernetes_version",
     "expected a string, got number 1.34 (quote it)"),
    ("roles: [gpu]", "roles: gpu", "roles: gpu", "nodes[3].roles", "expected a list, got string 'gpu'"),
])
def test_wrong_types(old, new, needle, path, message):
    text = edit(old, new)
    assert problems(text) == [f"{FILE}:{line_of(text, needle)}: {path}: {message}"]


def test_missing_required_key_points_at_its_parent():
    text = edit("    region: us-west-2\n", "")
    assert problems(text) == [f"{FILE}:{line_of(text, '  s3:')}: cluster.s3.region: missing required key 'region'"]


def test_bucket_name_s3_would_refuse():
    text = edit("exa-loki-h200", "Exa_Loki")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'Exa_Loki')}: cluster.s3.buckets.loki: bucket name 'Exa_Loki' may hold only lower-case "
        "letters, digits, dots and hyphens, and must start and end with a letter or digit"]


def test_reserved_label_prefix():
    text = edit("exa.ai/pool: training", "node.kubernetes.io/pool: training")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'node.kubernetes.io/pool')}: nodes[3].labels.node.kubernetes.io/pool: "
        "'node.kubernetes.io/pool' uses the reserved prefix 'node.kubernetes.io'; use your own domain"]


def test_host_bits_in_a_cidr_suggest_the_fix():
    from pydantic import TypeAdapter, ValidationError

    from forge.inventory.schema import Cidr

    with pytest.raises(ValidationError, match=r"'10\.10\.10\.1/24' has host bits set; did you mean 10\.10\.10\.0/24\?"):
        TypeAdapter(Cidr).validate_python("10.10.10.1/24")


def test_unknown_component():
    text = inventory_text("h200").replace("\ncomponents:\n", "\ncomponents:\n  gpu-operatr: {}\n", 1)
    assert problems(text)[0].startswith(f"{FILE}:{line_of(text, 'gpu-operatr')}: components.gpu-operatr: unknown component 'gpu-operatr' (expected one of: ")


def test_invalid_yaml_names_the_line():
    text = edit("    region: us-west-2\n", "    region: 'us-west-2\n")
    # The quote stays open to the end of the file: an apostrophe further down (in a comment, such as
    # "project's") would close it and make a different error.
    head, tail = text.split("    region: 'us-west-2\n", 1)
    text = head + "    region: 'us-west-2\n" + tail.replace("'", "")
    end = text.count("\n") + 1
    quoted = line_of(text, "region: 'us-west-2")
    assert problems(text) == [f"{FILE}:{end}: <top>: not valid YAML: found unexpected end of stream "
                              f"(while scanning a quoted scalar at line {quoted})"]


def test_duplicate_key_names_the_line():
    text = edit("    cpu_threads: 192\n", "    cpu_threads: 192\n    cpu_threads: 96\n")
    assert problems(text) == [f"{FILE}:{line_of(text, 'cpu_threads: 96')}: profiles.sr680a-h200.cpu_threads: "
                              f"duplicate key 'cpu_threads' (first at line {line_of(text, 'cpu_threads: 192')}): YAML keeps only the last"]


def test_gpu_role_must_match_the_profile():
    text = edit("    roles: [control-plane, system]\n", "    roles: [control-plane, system, gpu]\n")
    assert problems(text) == [
        f"{FILE}:{line_of(text, 'roles: [control-plane, system, gpu]')}: nodes[0].roles: node has role 'gpu' but profile 'control-plane' has no GPUs"]
