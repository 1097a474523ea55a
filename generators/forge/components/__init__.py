"""The component registry: adding a component is one module and one line here."""
from __future__ import annotations

from forge.components.base import Component
from forge.components.gpu_operator import GpuOperator
from forge.components.network_operator import NetworkOperator
from forge.components.node_feature_discovery import NodeFeatureDiscovery

COMPONENTS: tuple[Component, ...] = (
    NodeFeatureDiscovery(),
    NetworkOperator(),
    GpuOperator(),
)

__all__ = ["COMPONENTS", "Component"]
