"""Alert rules for InfiniBand ports, from node-exporter's infiniband collector.

InfiniBand ports are watched by their HCA (`device`=mlx5_0, `port`), the names the inventory lists
per NIC (`hcas`), on exactly the nodes of each profile (a join on forge:node_info, never a list of
node names): a port not ACTIVE (link down, or stuck in
INIT waiting for the subnet manager), an HCA that stopped reporting, the link going down, and the
link-layer error counters (symbol errors, link error recovery, received packets with errors).
The RoCE rule `RdmaPortErrors` (forge.observability.rules) covers Ethernet RDMA ports only.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from forge.model.cluster import ClusterModel, NodeModel
from forge.observability import metrics as m
from forge.observability.promql import alert, on_nodes_of, regex_alternation, selector

INFINIBAND = "infiniband"
ROLE_SEVERITY = {"compute": "critical", "storage": "critical", "frontend": "warning", "management": "warning"}
IB_ERROR_COUNTERS = (m.IB_SYMBOL_ERRORS, m.IB_LINK_ERROR_RECOVERY, m.IB_RX_ERRORS)


def infiniband_hcas(cluster: ClusterModel) -> list[str]:
    """Every HCA of the cluster's InfiniBand ports (the RoCE rule leaves them out)."""
    return sorted({h for n in cluster.nodes for spec, _ in n.nics() if spec.link_type == INFINIBAND for h in spec.hcas})


def _profiles(cluster: ClusterModel) -> dict[str, list[NodeModel]]:
    out: dict[str, list[NodeModel]] = defaultdict(list)
    for node in cluster.nodes:
        out[node.profile_name].append(node)
    return dict(sorted(out.items()))


def infiniband_rules(cluster: ClusterModel) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for profile, nodes in _profiles(cluster).items():
        by_role: dict[str, list[str]] = defaultdict(list)
        for spec, _ in nodes[0].nics():
            if spec.link_type == INFINIBAND:
                by_role[spec.role] += spec.hcas
        for role, hcas in sorted(by_role.items()):
            rules += _role_rules(profile, role, hcas)
    return rules


def _of(vector: str, profile: str) -> str:
    """On the inventory nodes of `profile` only: a join on forge:node_info, no list of node names."""
    return on_nodes_of(vector, m.NODE_INFO, [profile], m.NODE_LABEL)


def _role_rules(profile: str, role: str, hcas: list[str]) -> list[dict[str, Any]]:
    sel = selector(device_re=regex_alternation(hcas))
    severity = ROLE_SEVERITY[role]
    labels = {"nic_role": role}
    port = f"{{{{ $labels.node }}}} InfiniBand {role} port {{{{ $labels.device }}}}/{{{{ $labels.port }}}}"
    errors = " or ".join(f"{_of(f'increase({name}{sel}[15m])', profile)} > 0" for name in IB_ERROR_COUNTERS)
    return [
        alert("InfinibandPortNotActive", f"{_of(f'{m.IB_STATE}{sel}', profile)} != {m.IB_STATE_ACTIVE}", severity,
              f"{port} is not active (state {{{{ $value }}}}: 1 down, 2 init)",
              "Down: check the cable and the switch port (`ibstat`, `mlxlink -d <device>`). Init: the port "
              "is up but no subnet manager has configured it: check the fabric's subnet manager (UFM/opensm). "
              "Multi-node jobs on this node stall or fall back to TCP: drain it.",
              for_="2m", labels=labels),
        alert("InfinibandPortMissing",
              f"(count by ({m.NODE_LABEL}) {_of(f'{m.IB_STATE}{sel}', profile)} or on ({m.NODE_LABEL}) "
              f"(count by ({m.NODE_LABEL}) {_of(m.IB_STATE, profile)} * 0)) < {len(hcas)}",
              severity, f"{{{{ $labels.node }}}} reports fewer InfiniBand {role} HCAs than the {profile} profile lists ({len(hcas)})",
              "An HCA vanished (firmware hang, driver crash, renumbered mlx5 devices): check `rdma link` and dmesg "
              "on the node; fix the inventory's hcas if the hardware changed.",
              for_="5m", labels=labels),
        alert("InfinibandLinkDowned", f"{_of(f'increase({m.IB_LINK_DOWNED}{sel}[15m])', profile)} > 0", "warning",
              f"{port} went down and had to retrain its link",
              "The link failed its error recovery and went down: NCCL jobs using it saw errors or hangs. "
              "Check the cable and transceiver (`mlxlink -d <device> -m`), then the switch side.",
              labels=labels),
        alert("InfinibandLinkErrors", errors, "warning",
              f"{port} counts symbol errors, link error recoveries or bad received packets",
              "Rising link-layer errors mean a marginal cable, transceiver or switch port: check `mlxlink -d "
              "<device> -c` (BER and FEC counters) and the switch's port counters; replace the cable.",
              for_="10m", labels=labels),
    ]
