"""Bandwidth floors of the node tests (forge.components.node_tests), as the hardware catalogue
gives them (catalogue/hardware.yaml: nccl_floors, nvlink_floors, two_node_floors). Each floor
names the NCCL test shape it applies to, the figure it comes from and a tolerance:

    busbw_gbytes = measured_gbytes * (1 - tolerance)

`measured_gbytes` is a figure published by an operator of that hardware or by NCCL's maintainers
(`source` names it). Where nobody publishes one, a per-rail floor may be derived instead (no
`measured_gbytes`): the slower link on the path, min(port_gbps, gpu_pcie_gbps) / 8, and the
catalogue's comment says so. hardware.Catalogue checks the arithmetic and that no floor is above
the line rate of its path.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

Text = Annotated[str, Field(min_length=1)]
Positive = Annotated[int, Field(gt=0)]
GBytes = Annotated[float, Field(gt=0, strict=False)]
Key = tuple[Any, ...]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class TestShape(_Strict):
    """How the test is run for the floor to apply: bytes per all-reduce, timed all-reduces (after
    5 untimed), and the ranks taking part (nccl-tests' all_reduce_perf -b/-e, -n, and -np)."""

    __test__ = False  # not a pytest class
    message_bytes: Positive
    iterations: Positive
    ranks: Annotated[int, Field(ge=2)]


class _Floor(_Strict):
    measured_gbytes: GBytes | None = None  # the published figure (`source`); None: derived
    tolerance: Annotated[float, Field(ge=0, lt=1, strict=False)]
    busbw_gbytes: GBytes  # what the test must reach: nccl-tests' bus bandwidth, GB/s
    shape: TestShape
    source: Text

    @property
    def derived(self) -> float:
        return round((self.measured_gbytes or 0.0) * (1 - self.tolerance), 2)

    @property
    def formula(self) -> str:
        return "measured_gbytes * (1 - tolerance)"


class NcclFloor(_Floor):
    """Per rail: an all-reduce of one GPU on each of two nodes, over the NIC nearest to it."""

    gpu: str  # a key of `gpus`
    nic: str  # a key of `nics`
    port_gbps: Positive  # the NIC port's line rate the floor assumes
    gpu_pcie_gbps: Positive  # the GPU's host link, per direction

    @property
    def line_rate_gbytes(self) -> float:
        return min(self.port_gbps, self.gpu_pcie_gbps) / 8

    @property
    def derived(self) -> float:
        if self.measured_gbytes is None:
            return round(self.line_rate_gbytes * (1 - self.tolerance), 2)
        return super().derived

    @property
    def formula(self) -> str:
        return super().formula if self.measured_gbytes is not None else "min(port_gbps, gpu_pcie_gbps) / 8 * (1 - tolerance)"


class NvlinkFloor(_Floor):
    """In-node: an all-reduce over every GPU of the node (NVLink and NVSwitch), no NIC involved."""

    gpu: str
    gpus: Positive  # GPUs per node the figure was measured with


class TwoNodeFloor(_Floor):
    """Two whole nodes: one all-reduce over every GPU of both, over every rail at once."""

    gpu: str
    nic: str
    port_gbps: Positive
    nics: Positive  # fabric NICs per node the figure was measured with


def floor_rules(floors: dict[str, tuple[_Floor, ...]], gpus: dict[str, Any], nics: dict[str, Any],
                unknown: Any) -> Iterator[tuple[Key, str]]:
    """Names point at catalogued models, the arithmetic holds, no floor twice, a measured figure
    under its path's line rate, and every ranks count matches what the floor says it tests."""
    for section, entries in floors.items():
        seen: set[tuple[Any, ...]] = set()
        for i, floor in enumerate(entries):
            at = (section, i)
            yield from _model_rules(at, floor, gpus, nics, unknown)
            if floor.busbw_gbytes != floor.derived:
                yield (*at, "busbw_gbytes"), f"{floor.busbw_gbytes} is not {floor.formula} = {floor.derived}"
            if isinstance(floor, NcclFloor) and floor.measured_gbytes and floor.measured_gbytes > floor.line_rate_gbytes:
                yield (*at, "measured_gbytes"), (f"{floor.measured_gbytes} GB/s is above the path's line rate, "
                                                 f"min(port_gbps, gpu_pcie_gbps) / 8 = {floor.line_rate_gbytes:g}")
            ranks = {NcclFloor: 2, NvlinkFloor: getattr(floor, "gpus", 0), TwoNodeFloor: 2 * getattr(floor, "nics", 0)}[type(floor)]
            if floor.shape.ranks != ranks:
                yield (*at, "shape", "ranks"), f"{floor.shape.ranks}: this floor's test has {ranks} ranks"
            key = tuple(v for k, v in floor.model_dump().items() if k in ("gpu", "nic", "port_gbps", "gpus", "nics"))
            if key in seen:
                yield at, f"a second floor for {', '.join(map(str, key))}"
            seen.add(key)


def _model_rules(at: Key, floor: _Floor, gpus: dict[str, Any], nics: dict[str, Any], unknown: Any) -> Iterator[tuple[Key, str]]:
    if floor.gpu not in gpus:  # type: ignore[attr-defined]
        yield (*at, "gpu"), unknown("GPU model", floor.gpu, gpus)  # type: ignore[attr-defined]
    nic = getattr(floor, "nic", None)
    if nic is None:
        return
    if nic not in nics:
        yield (*at, "nic"), unknown("NIC model", nic, nics)
    elif floor.port_gbps > nics[nic].max_port_gbps:  # type: ignore[attr-defined]
        yield (*at, "port_gbps"), f"{nic} ports run at most {nics[nic].max_port_gbps} Gb/s"
