"""The RDMA shared device plugin's configuration as typed structures.

NicClusterPolicy `spec.rdmaSharedDevicePlugin.config` is a JSON string that the operator copies
into the plugin's ConfigMap: no CRD schema looks inside it, and the plugin only complains at start
on the node. So forge builds it from these models, whose fields are the plugin's own
(Mellanox/k8s-rdma-shared-dev-plugin `pkg/types/types.go`: UserConfigList, UserConfig, Selectors)
and whose rules are those of its `ValidateConfigs` (`pkg/resources/resources_manager.go`):
resource names of [a-zA-Z0-9_] only and unique, rdmaHcaMax >= 0, either selectors or devices.
Unknown fields are refused: Go's json.Unmarshal would silently drop a misspelt one.
"""
from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

HexId = Annotated[str, Field(pattern=r"^[0-9a-f]{4}$")]  # PCI vendor/device ID as the plugin compares it
# The plugin compares `linkTypes` with the netdev's link layer as netlink names it (EncapType of the
# interface: "ether" for Ethernet/RoCE ports, "infiniband" for IPoIB ports); other words never match.
PluginLinkType = Literal["ether", "infiniband"]
LINK_TYPE = {"ethernet": "ether", "infiniband": "infiniband"}  # inventory link_type -> the plugin's word


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Selectors(_Strict):
    """Logical AND between selectors, OR inside one (the plugin's matching rule)."""

    vendors: list[HexId] = []
    deviceIDs: list[HexId] = []
    drivers: list[str] = []
    ifNames: list[Annotated[str, Field(pattern=r"^[a-zA-Z0-9_.-]{1,15}$")]] = []
    linkTypes: list[PluginLinkType] = []

    def empty(self) -> bool:
        return not (self.vendors or self.deviceIDs or self.drivers or self.ifNames or self.linkTypes)


class ResourceConfig(_Strict):
    resourceName: Annotated[str, Field(pattern=r"^[a-zA-Z0-9_]+$")]
    resourcePrefix: Annotated[str, Field(pattern=r"^[a-zA-Z0-9_.]+$")] | None = None  # plugin default "rdma"
    rdmaHcaMax: Annotated[int, Field(ge=0)]
    devices: list[str] = []  # deprecated by the plugin in favour of selectors.ifNames
    selectors: Selectors = Selectors()

    @model_validator(mode="after")
    def _selectors_or_devices(self) -> "ResourceConfig":
        if self.selectors.empty() and not self.devices:
            raise ValueError(f"resource '{self.resourceName}': neither selectors nor devices given")
        if not self.selectors.empty() and self.devices:
            raise ValueError(f"resource '{self.resourceName}': selectors and devices are mutually exclusive")
        return self


class PluginConfig(_Strict):
    periodicUpdateInterval: Annotated[int, Field(ge=0)] | None = None  # seconds; plugin default 60
    configList: Annotated[list[ResourceConfig], Field(min_length=1)]

    @model_validator(mode="after")
    def _unique_names(self) -> "PluginConfig":
        names = [c.resourceName for c in self.configList]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"resource names must be unique: {', '.join(dupes)}")
        return self

    def to_json(self) -> str:
        """The text for NicClusterPolicy: indented for review. The operator pastes it into a
        single-quoted YAML scalar, so it must not contain a single quote (names cannot)."""
        text = json.dumps(self.model_dump(exclude_none=True, exclude_defaults=True), indent=2)
        if "'" in text:
            raise ValueError("the RDMA shared device plugin config must not contain a single quote")
        return text + "\n"
