"""The component registry: adding a component is one module and one line here."""
from __future__ import annotations

from forge.components.alloy import Alloy
from forge.components.alluxio import Alluxio
from forge.components.efa_device_plugin import EfaDevicePlugin
from forge.components.base import Component
from forge.components.external_secrets import ExternalSecrets
from forge.components.flyte import Flyte
from forge.components.gpu_operator import GpuOperator
from forge.components.jupyterhub import JupyterHub
from forge.components.karpenter import Karpenter
from forge.components.kuberay_operator import KuberayOperator
from forge.components.kueue import Kueue
from forge.components.loki import Loki
from forge.components.network_operator import NetworkOperator
from forge.components.node_feature_discovery import NodeFeatureDiscovery
from forge.components.prometheus import Prometheus, PrometheusCrds
from forge.components.scheduling import Scheduling
from forge.components.training_operator import TrainingOperator

COMPONENTS: tuple[Component, ...] = (
    NodeFeatureDiscovery(),
    Scheduling(),
    ExternalSecrets(),
    PrometheusCrds(),
    Karpenter(),
    NetworkOperator(),
    EfaDevicePlugin(),
    GpuOperator(),
    TrainingOperator(),
    KuberayOperator(),
    Kueue(),
    Alluxio(),
    Flyte(),
    JupyterHub(),
    Prometheus(),
    Loki(),
    Alloy(),
)

__all__ = ["COMPONENTS", "Component"]
