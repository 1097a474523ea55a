"""The hardware catalogue is data: a model added to catalogue/hardware.yaml is usable with no code
change, a broken entry is refused with the catalogue's file:line, and an unknown model in an
inventory gets the closest catalogued names."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from forge.facts import hardware
from forge.commands.main import main
from forge.files.datafile import DataFileError
from forge.errors import InventoryError
from forge.facts.hardware import CATALOGUE_FILE, GPU_MODELS, SERVER_MODELS, load_catalogue
from forge.fleet import load_plan_text
from forge.inventory import load_inventory_text
from forge.facts.versions import versions
from tests.helpers import copy_repo_inputs, inventory_text

FILE = "clusters/a100/inventory.yaml"
CATALOGUE = CATALOGUE_FILE.read_text()


def line_of(text: str, needle: str) -> int:
    return text.count("\n", 0, text.index(needle)) + 1


def a100_on(server: str, gpu: str) -> str:
    text = inventory_text("a100")
    for old, new in (("server: supermicro-as-4124go-nart+", f"server: {server}"), ("model: A100-80GB", f"model: {gpu}")):
        assert old in text, f"the shipped inventory changed: {old!r} not found"
        text = text.replace(old, new)
    return text


def test_a_newly_catalogued_server_loads_and_derives_its_gpu_facts():
    """The a100 fleet moved onto Dell XE9680s with H100s: only catalogue data makes that work."""
    model = load_plan_text(a100_on("dell-xe9680", "H100-80GB"), FILE).cluster
    assert [m.key for m in model.gpu_models] == ["H100-80GB"]
    assert model.driver_version == versions().gpu_drivers["hopper"]
    assert sum(n.gpu_count for n in model.gpu_nodes) == 80


def test_an_unknown_server_gets_the_closest_catalogued_names():
    text = a100_on("dell-xe9600", "H100-80GB")
    with pytest.raises(InventoryError) as caught:
        load_inventory_text(text, FILE)
    known = ", ".join(sorted(SERVER_MODELS))
    assert [str(p) for p in caught.value.problems] == [
        f"{FILE}:{line_of(text, 'dell-xe9600')}: profiles.as-4124go-a100.server: unknown server model 'dell-xe9600' "
        f"(did you mean: dell-xe9680?; known: {known})"]


def test_a_server_refuses_a_gpu_it_is_not_sold_with():
    text = a100_on("dell-xe9680", "B200")
    with pytest.raises(InventoryError) as caught:
        load_inventory_text(text, FILE)
    assert any("dell-xe9680 takes A100-80GB, H100-80GB, H200-141GB, not B200" in str(p) for p in caught.value.problems)


def test_the_catalogue_has_the_common_8_gpu_servers_and_their_gpus():
    for server in ("dell-xe9680", "hpe-cray-xd670", "supermicro-sys-821ge-tnhr", "lenovo-sr680a-v3", "supermicro-as-4124go-nart+"):
        assert SERVER_MODELS[server].max_gpus == 8
    assert GPU_MODELS["B200"].mig_profile("7g.180gb").memory_slices == 8
    assert GPU_MODELS["H100-NVL"].mig_profile("1g.12gb").max_instances == 7
    assert not GPU_MODELS["L40S-48GB"].mig_capable
    for gpu in GPU_MODELS.values():  # every profile fits one GPU on its own
        for p in gpu.mig_profiles:
            assert p.compute_slices * p.max_instances <= hardware.MIG_SLICES_COMPUTE, (gpu.key, p.name)
            assert p.memory_slices * p.max_instances <= hardware.MIG_SLICES_MEMORY, (gpu.key, p.name)


def test_every_gpu_architecture_has_a_driver_branch_in_the_versions_file():
    drivers = versions().gpu_drivers
    assert sorted({g.architecture for g in GPU_MODELS.values()} - set(drivers)) == []


def broken(tmp_path: Path, old: str, new: str) -> tuple[str, list[str]]:
    assert old in CATALOGUE, f"the catalogue changed: {old!r} not found"
    text = CATALOGUE.replace(old, new, 1)
    path = tmp_path / "hardware.yaml"
    path.write_text(text)
    with pytest.raises(DataFileError) as caught:
        load_catalogue(path, "hardware.yaml")
    return text, [str(p) for p in caught.value.problems]


def test_an_unquoted_pci_id_is_refused_with_its_line(tmp_path):
    text, problems = broken(tmp_path, 'pci_device_id: "2901"', "pci_device_id: 2901")
    assert problems == [f"hardware.yaml:{line_of(text, 'pci_device_id: 2901')}: gpus.B200.pci_device_id: "
                        "input should be a valid string, got 2901 (quote it)"]


def test_an_unknown_key_and_a_missing_fact_are_refused(tmp_path):
    text, problems = broken(tmp_path, "    max_power_w: 1000\n", "    max_power: 1000\n")
    at = line_of(text, "max_power: 1000")
    assert problems == [f"hardware.yaml:{line_of(text, '  B200:')}: gpus.B200.max_power_w: missing required key",
                        f"hardware.yaml:{at}: gpus.B200.max_power: unknown key"]


def test_a_mig_profile_larger_than_a_gpu_is_refused(tmp_path):
    text, problems = broken(tmp_path, "{name: 7g.180gb, compute_slices: 7,", "{name: 7g.180gb, compute_slices: 8,")
    assert problems == [f"hardware.yaml:{line_of(text, 'name: 7g.180gb')}: gpus.B200.mig_profiles[5].compute_slices: "
                        "input should be less than or equal to 7"]


def test_a_server_naming_an_uncatalogued_gpu_gets_a_suggestion(tmp_path):
    text, problems = broken(tmp_path, "gpu_models: [H100-80GB, H200-141GB]\n  lenovo",
                            "gpu_models: [H100-80GB, H200-141G]\n  lenovo")
    assert problems == [f"hardware.yaml:{line_of(text, 'H200-141G]')}: servers.hpe-cray-xd670.gpu_models: "
                        f"unknown GPU model 'H200-141G' (did you mean: H200-141GB?; known: {', '.join(sorted(GPU_MODELS))})"]


def test_adding_a_server_is_a_data_edit(tmp_path):
    path = tmp_path / "hardware.yaml"
    path.write_text(CATALOGUE + "  example-8u:\n    source: test\n    product: Example 8U\n    max_gpus: 8\n"
                    "    max_nvme: 12\n    gpu_models: [B200]\n")
    assert load_catalogue(path, "hardware.yaml").servers["example-8u"].gpu_models == {"B200"}


@pytest.fixture
def broken_catalogue(tmp_path, monkeypatch):
    path = tmp_path / "hardware.yaml"
    path.write_text(CATALOGUE.replace("    max_nvme: 16\n", "    max_nvme: sixteen\n", 1))
    monkeypatch.setattr(hardware, "CATALOGUE_FILE", path)
    hardware.catalogue.cache_clear()
    yield path
    hardware.catalogue.cache_clear()


def test_the_cli_reports_a_broken_catalogue_as_a_user_error(broken_catalogue, tmp_path):
    repo = copy_repo_inputs(tmp_path / "repo")
    result = CliRunner().invoke(main, ["generate", "--root", str(repo)])
    line = line_of(broken_catalogue.read_text(), "max_nvme: sixteen")
    assert result.exit_code == 2, result.output
    assert (f"error: generators/forge/facts/catalogue/hardware.yaml:{line}: servers.dell-xe9680.max_nvme: "
            "input should be a valid integer") in result.output
    assert "Traceback" not in result.output and not (repo / "overlays").exists()


def test_more_nic_cards_than_the_server_has_pcie_slots_are_refused():
    text = inventory_text("h200")
    old = "      - model: bluefield-3\n        count: 2\n"
    assert old in text, "the shipped inventory changed"
    text = text.replace(old, "      - model: bluefield-3\n        count: 3\n", 1)
    with pytest.raises(InventoryError) as caught:
        load_inventory_text(text, "clusters/h200/inventory.yaml")
    assert ("profiles.sr680a-h200.nics: 11 NIC/DPU cards do not fit a lenovo-sr680a-v3 (at most 10 PCIe slots)"
            in [f"{p.path}: {p.message}" for p in caught.value.problems])
