"""Rules that span fields of one inventory. Each returns Problems; none stops at the first.

Only rules about the inventory itself live here: rules that need the component registry or the
derived model (settings blocks, the compute fabric's rails and IP pools, RDMA port roles) run in
the fleet stage (forge.fleet.rules), which hands them to the loader, so this layer imports
nothing above itself."""
from __future__ import annotations

import ipaddress
import re
from collections import Counter
from typing import Any, Iterator

from forge.errors import Problem
from forge.facts.hardware import GPU_MODELS, INSTANCE_TYPES, MIG_SLICES_COMPUTE, MIG_SLICES_MEMORY, NIC_MODELS, SERVER_MODELS
from forge.inventory import limits
from forge.inventory.layouts import mig_layout_named, mig_layout_of
from forge.inventory.api_server import api_server_rules
from forge.inventory.links import link_rules
from forge.inventory.pools import pool_rules
from forge.inventory.located import LoadedInventory, format_path, line_for
from forge.inventory.schema import Inventory, MigLayoutGroup


def check_raw(file: str, data: dict[str, Any], lines: dict) -> list[Problem]:
    """Rules that hold even when the shape is wrong elsewhere, so one run reports them all."""
    first: dict[str, int] = {}
    problems = limits.raw_limits(file, data, lines)
    nodes = data.get("nodes")
    for i, node in enumerate(nodes if isinstance(nodes, list) else []):
        name = node.get("name") if isinstance(node, dict) else None
        if not isinstance(name, str):
            continue
        if name in first:
            where = line_for(lines, ("nodes", first[name]))
            path = ("nodes", i, "name")
            problems.append(Problem(file, line_for(lines, path), format_path(path), f"duplicate node name '{name}' (first defined at line {where})"))
        else:
            first[name] = i
    return problems


def check_inventory(loaded: LoadedInventory, data: dict[str, Any]) -> list[Problem]:
    """Rules over the typed inventory (its shape is known to be right)."""
    inv = loaded.inventory
    return [
        *_node_references(loaded, inv),
        *_profile_capacity(loaded, inv),
        *_mig_layouts(loaded, inv),
        *_expected_capacity(loaded, inv),
        *_bucket_names(loaded, inv),
        *link_rules(loaded),
        *limits.node_rules(loaded),
        *pool_rules(loaded),
        *api_server_rules(loaded),
    ]


def _node_references(loaded: LoadedInventory, inv: Inventory) -> Iterator[Problem]:
    layouts = inv.cluster.mig_layouts
    for name, profile in inv.profiles.items():
        if profile.mig_layout and profile.mig_layout not in layouts:
            yield loaded.problem(("profiles", name, "mig_layout"), unknown("MIG layout", profile.mig_layout, layouts))
    for i, node in enumerate(inv.nodes):
        profile = inv.profiles.get(node.profile)
        if profile is None:
            yield loaded.problem(("nodes", i, "profile"), unknown("profile", node.profile, inv.profiles))
            continue
        if node.mig_layout and node.mig_layout not in layouts:
            yield loaded.problem(("nodes", i, "mig_layout"), unknown("MIG layout", node.mig_layout, layouts))
        has_gpu = profile.gpu is not None
        if ("gpu" in node.roles) != has_gpu:
            said = "has role 'gpu'" if not has_gpu else "lacks role 'gpu'"
            yield loaded.problem(("nodes", i, "roles"), f"node {said} but profile '{node.profile}' has {'no ' if not has_gpu else ''}GPUs")
        if node.mig_layout and not (has_gpu and GPU_MODELS[profile.gpu.model].mig_capable):
            model = profile.gpu.model if has_gpu else "no GPU"
            yield loaded.problem(("nodes", i, "mig_layout"), f"MIG layout set but profile '{node.profile}' has {model}, which cannot do MIG")
        seen_taints = Counter((t.key, t.effect) for t in node.taints)
        for (key, effect), n in seen_taints.items():
            if n > 1:
                yield loaded.problem(("nodes", i, "taints"), f"taint {key}:{effect} given {n} times")


def _profile_capacity(loaded: LoadedInventory, inv: Inventory) -> Iterator[Problem]:
    for name, profile in inv.profiles.items():
        at = ("profiles", name)
        server = SERVER_MODELS[profile.server]
        if profile.gpu:
            if profile.gpu.count > server.max_gpus:
                yield loaded.problem(at + ("gpu", "count"), f"{profile.gpu.count} GPUs do not fit a {profile.server} (at most {server.max_gpus})")
            if server.gpu_models and profile.gpu.model not in server.gpu_models:
                yield loaded.problem(at + ("gpu", "model"), f"{profile.server} takes {', '.join(sorted(server.gpu_models))}, not {profile.gpu.model}")
        if len(profile.nvme) > server.max_nvme:
            yield loaded.problem(at + ("nvme",), f"{len(profile.nvme)} NVMe devices do not fit a {profile.server} (at most {server.max_nvme})")
        cards = sum(nic.count for nic in profile.nics)
        if server.pcie_slots is not None and cards > server.pcie_slots:
            yield loaded.problem(at + ("nics",), f"{cards} NIC/DPU cards do not fit a {profile.server} (at most {server.pcie_slots} PCIe slots)")
        yield from _duplicates(loaded, at + ("nvme",), [d.device for d in profile.nvme], "device", "NVMe device")
        yield from _duplicates(loaded, at + ("nvme",), [d.mount for d in profile.nvme], "mount", "NVMe mount path")
        owner: dict[str, str] = {}  # interface -> the NIC entry that lists it first
        for j, nic in enumerate(profile.nics):
            nic_at = at + ("nics", j)
            model = NIC_MODELS[nic.model]
            if nic.port_gbps > model.max_port_gbps:
                yield loaded.problem(nic_at + ("port_gbps",), f"{nic.model} ports run at most {model.max_port_gbps} Gb/s, not {nic.port_gbps}")
            ports = nic.count * nic.ports
            if len(nic.interfaces) != ports:
                yield loaded.problem(nic_at + ("interfaces",), f"{nic.count} card(s) x {nic.ports} port(s) = {ports} interfaces expected, {len(nic.interfaces)} listed")
            for k, iface in enumerate(nic.interfaces):
                if iface in owner:
                    yield loaded.problem(nic_at + ("interfaces", k), f"interface '{iface}' is already used by {owner[iface]} of this profile")
                owner.setdefault(iface, f"nics[{j}]")


def _duplicates(loaded: LoadedInventory, at: tuple, values: list[str], field: str, what: str) -> Iterator[Problem]:
    seen: dict[str, int] = {}
    for k, value in enumerate(values):
        if value in seen:
            yield loaded.problem(at + (k, field), f"{what} '{value}' listed twice (also at {at[-1]}[{seen[value]}])")
        seen.setdefault(value, k)


def _mig_layouts(loaded: LoadedInventory, inv: Inventory) -> Iterator[Problem]:
    """Each layout must fit every GPU model of the nodes that use it."""
    users: dict[str, dict[str, tuple[str, int]]] = {}  # layout -> GPU model -> first node (or pool) using it, its GPUs
    for node in inv.nodes:
        profile = inv.profiles.get(node.profile)
        layout = mig_layout_named(node, profile) if profile and mig_layout_of(node, profile) else None
        if layout:
            users.setdefault(layout, {}).setdefault(profile.gpu.model, (node.name, profile.gpu.count))
    for pool in inv.node_pools:
        instance = INSTANCE_TYPES[pool.instance_type]
        if pool.mig_layout and instance.gpu_model and GPU_MODELS[instance.gpu_model].mig_capable:
            users.setdefault(pool.mig_layout, {}).setdefault(instance.gpu_model, (f"pool {pool.name}", instance.gpu_count))
    for layout, models in users.items():
        groups = inv.cluster.mig_layouts.get(layout, [])
        for model_key, (node_name, gpu_count) in models.items():
            yield from _layout_fits(loaded, layout, groups, model_key, gpu_count, node_name)


def _layout_fits(loaded, layout: str, groups: list[MigLayoutGroup], model_key: str, gpu_count: int, node: str) -> Iterator[Problem]:
    model = GPU_MODELS[model_key]
    used_by = f"on {model_key} (node {node})"
    claimed: dict[int, int] = {}
    for g, group in enumerate(groups):
        at = ("cluster", "mig_layouts", layout, g)
        indices = range(gpu_count) if group.gpus == "all" else group.gpus
        for idx in indices:
            if idx >= gpu_count:
                yield loaded.problem(at + ("gpus",), f"GPU index {idx} does not exist {used_by}: it has GPUs 0-{gpu_count - 1}")
            elif idx in claimed:
                yield loaded.problem(at + ("gpus",), f"GPU {idx} is also laid out by group {claimed[idx]}")
            claimed.setdefault(idx, g)
        compute = memory = 0
        for name, count in group.profiles.items():
            profile = model.mig_profile(name)
            if profile is None:
                valid = ", ".join(p.name for p in model.mig_profiles)
                yield loaded.problem(at + ("profiles", name), f"MIG profile '{name}' does not exist {used_by}; expected one of: {valid}")
                continue
            if count > profile.max_instances:
                yield loaded.problem(at + ("profiles", name), f"{count} x {name} do not fit one GPU {used_by} (at most {profile.max_instances})")
            compute += profile.compute_slices * count
            memory += profile.memory_slices * count
        if compute > MIG_SLICES_COMPUTE or memory > MIG_SLICES_MEMORY:
            yield loaded.problem(at + ("profiles",), f"profiles need {compute}/{MIG_SLICES_COMPUTE} compute and {memory}/{MIG_SLICES_MEMORY} memory slices per GPU {used_by}: more than one GPU has")


def _expected_capacity(loaded: LoadedInventory, inv: Inventory) -> Iterator[Problem]:
    expected = inv.cluster.expected
    gpu_nodes = [n for n in inv.nodes if (p := inv.profiles.get(n.profile)) and p.gpu]
    gpus = sum(inv.profiles[n.profile].gpu.count for n in gpu_nodes)
    if expected.gpu_nodes is not None and expected.gpu_nodes != len(gpu_nodes):
        yield loaded.problem(("cluster", "expected", "gpu_nodes"), f"expected {expected.gpu_nodes} GPU nodes, the node list has {len(gpu_nodes)}")
    if expected.gpus is not None and expected.gpus != gpus:
        yield loaded.problem(("cluster", "expected", "gpus"), f"expected {expected.gpus} GPUs, the nodes' profiles add up to {gpus}")


def _bucket_names(loaded: LoadedInventory, inv: Inventory) -> Iterator[Problem]:
    for key, bucket in inv.cluster.s3.buckets.items():
        reason = s3_bucket_problem(bucket)
        if reason:
            yield loaded.problem(("cluster", "s3", "buckets", key), f"bucket name '{bucket}' {reason}")
    for i, key in enumerate(inv.cluster.s3.durable):
        if key not in inv.cluster.s3.buckets:
            yield loaded.problem(("cluster", "s3", "durable", i), unknown("bucket", key, inv.cluster.s3.buckets))


def s3_bucket_problem(name: str) -> str | None:
    """Why S3 would refuse this bucket name (its general-purpose bucket naming rules), or None."""
    if not 3 <= len(name) <= 63:
        return "must be 3-63 characters long"
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*[a-z0-9]", name):
        return "may hold only lower-case letters, digits, dots and hyphens, and must start and end with a letter or digit"
    if ".." in name:
        return "must not contain two adjacent dots"
    try:
        ipaddress.IPv4Address(name)
        return "must not be formatted as an IP address"
    except ValueError:
        pass
    for prefix in ("xn--", "sthree-", "amzn-s3-demo-"):
        if name.startswith(prefix):
            return f"must not start with '{prefix}'"
    for suffix in ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"):
        if name.endswith(suffix):
            return f"must not end with '{suffix}'"
    return None


def unknown(what: str, value: str, choices: Any) -> str:
    options = ", ".join(sorted(choices)) or "none defined"
    return f"unknown {what} '{value}' (expected one of: {options})"
