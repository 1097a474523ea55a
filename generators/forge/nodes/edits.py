"""Add, remove and change inventory nodes: compute the new file text, prove it is what was meant,
validate it with the real inventory loader. Nothing here writes; `apply` in command.py does.

cluster.expected (the reviewers' cross-check of GPU nodes and GPUs) is kept in step when the file
has it: the loader refuses an inventory whose node list disagrees with it, so an edit that adds
or removes GPU capacity either updates those numbers or cannot be written at all. The numbers
are changed in place (same lines, same layout) and the command says so.
"""
from __future__ import annotations


import re
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap

from forge.errors import ForgeError, InventoryError
from forge.nodes.defaults import check_rack as _check_rack, profile_taints as _profile_taints
from forge.facts.hardware import GPU_MODELS
from forge.fleet import load_plan_text
from forge.fleet.links import Neighbours
from forge.inventory import LoadedInventory
from forge.inventory.layouts import mig_layout_named
from forge.inventory.loader import parse_yaml
from forge.inventory.schema import Node
from forge.nodes.yamltext import NodeText, flow_map, flow_seq, is_flow

NODE_KEYS = list(Node.model_fields)  # the schema's key order: name, profile, rack, roles, ...
NONE = "none"  # `--mig-layout none`: drop the node's own layout (the profile's applies)
_TAINT = re.compile(r"^(?P<key>[^=:\s]+)(?:=(?P<value>[^:\s]*))?:(?P<effect>[A-Za-z]+)$")


@dataclass
class Edit:
    """The outcome of an edit, before anything is written."""

    file: str
    old_text: str
    new_text: str
    old: LoadedInventory
    new: LoadedInventory
    messages: list[str] = field(default_factory=list)


# ---- option parsing -----------------------------------------------------------------------------

def parse_label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ForgeError(f"--label '{text}': expected key=value (e.g. exa.ai/pool=training)")
    return key, value


def parse_taint(text: str) -> dict[str, str]:
    match = _TAINT.match(text)
    if not match:
        raise ForgeError(f"--taint '{text}': expected key[=value]:Effect (e.g. nvidia.com/gpu:NoSchedule)")
    taint = {"key": match["key"]}
    if match["value"]:
        taint["value"] = match["value"]
    taint["effect"] = match["effect"]
    return taint


def parse_roles(text: str) -> list[str]:
    roles = [r.strip() for r in text.split(",") if r.strip()]
    if not roles:
        raise ForgeError(f"--roles '{text}': expected a comma-separated list, e.g. gpu or control-plane,system")
    return roles


# ---- capacity -----------------------------------------------------------------------------------

def _gpu_totals(loaded: LoadedInventory) -> tuple[int, int]:
    inv = loaded.inventory
    gpu_nodes = [n for n in inv.nodes if (p := inv.profiles.get(n.profile)) and p.gpu]
    return len(gpu_nodes), sum(inv.profiles[n.profile].gpu.count for n in gpu_nodes)


def carried(loaded: LoadedInventory, name: str) -> str:
    """What a node brings: GPUs, NVMe cache capacity, NICs, MIG layout."""
    inv = loaded.inventory
    node = next(n for n in inv.nodes if n.name == name)
    profile = inv.profiles[node.profile]
    parts = []
    if profile.gpu:
        gpu = GPU_MODELS[profile.gpu.model]
        parts.append(f"{profile.gpu.count} x {profile.gpu.model} GPUs ({profile.gpu.count * gpu.memory_gib} GiB GPU memory)")
    else:
        parts.append("no GPUs")
    nvme_gb = sum(d.size_gb for d in profile.nvme)
    parts.append(f"{len(profile.nvme)} NVMe device{'s' if len(profile.nvme) != 1 else ''} = {nvme_gb / 1000:g} TB NVMe cache capacity"
                 if profile.nvme else "no NVMe cache")
    nics = ", ".join(f"{n.count} x {n.model} ({n.role})" for n in profile.nics)
    if nics:
        parts.append(f"NICs: {nics}")
    layout = mig_layout_named(node, profile)
    if layout:
        parts.append(f"MIG layout {layout}")
    return f"{name} (profile {node.profile}, rack {node.rack}): " + "; ".join(parts)


# ---- the edits ----------------------------------------------------------------------------------

def _load_original(text: str, file: str, neighbours: Neighbours | None = None) -> LoadedInventory:
    """`neighbours`: the fleet's other inventories, which a link (a burst cluster) reads."""
    try:
        return load_plan_text(text, file, neighbours=neighbours).loaded  # every rule generate applies, not the shape alone
    except InventoryError as exc:
        raise ForgeError("\n".join([f"{file} is not valid now; fix it before editing it with forge node:",
                                    *map(str, exc.problems)])) from None


def _finish(doc_text: NodeText, new_text: str, intended: Any, old: LoadedInventory, messages: list[str],
            neighbours: Neighbours | None = None) -> Edit:
    """Validate the new text, and prove it holds exactly the intended data."""
    file = doc_text.file
    try:
        new = load_plan_text(new_text, file, neighbours=neighbours).loaded
    except InventoryError as exc:
        raise ForgeError("\n".join([f"the edit would make {file} invalid, so it was not written "
                                    "(line numbers are those of the edited text):", *map(str, exc.problems)])) from None
    got, _ = parse_yaml(new_text, file)
    if got != intended:
        raise ForgeError(f"internal: editing {file} as text did not give the intended data; nothing was written")
    return Edit(file, doc_text.text, new_text, old, new, messages)


def _with_expected(doc: NodeText, old: LoadedInventory, data: dict[str, Any], gpu_nodes: int, gpus: int,
                   messages: list[str]) -> NodeText:
    """Bump cluster.expected to the new totals when the file states them."""
    stated = (data.get("cluster") or {}).get("expected") or {}
    before = _gpu_totals(old)
    updates = {key: value for key, value, was in (("gpu_nodes", gpu_nodes, before[0]), ("gpus", gpus, before[1]))
               if key in stated and value != was}
    if not updates:
        return doc
    for key, value in updates.items():
        messages.append(f"cluster.expected.{key}: {stated[key]} -> {value} (kept in step with the node list)")
        stated[key] = value
    return doc.with_expected(updates)


def _totals_after(old: LoadedInventory, profile: str | None, delta: int, extra: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    nodes, gpus = _gpu_totals(old)
    p = old.inventory.profiles.get(profile or "")
    if p and p.gpu:
        nodes, gpus = nodes + delta, gpus + delta * p.gpu.count
    return nodes + extra[0], gpus + extra[1]


def add_node(text: str, file: str, name: str, profile: str, rack: str, roles: list[str] | None = None,
             labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
             mig_layout: str | None = None, like: str | None = None, new_rack: bool = False,
             neighbours: Neighbours | None = None) -> Edit:
    old = _load_original(text, file, neighbours)
    doc = NodeText.parse(text, file)
    _check_rack(old, doc, file, rack, new_rack)
    if doc.index(name) is not None:
        raise ForgeError(f"{file}:{doc.starts[doc.index(name)] + 1}: node '{name}' already exists; use `forge node set` to change it")
    if profile not in old.inventory.profiles:
        raise ForgeError(f"{file}:{doc.doc.lc.key('profiles')[0] + 1}: profiles: no profile '{profile}' for --profile "
                         f"(expected one of: {', '.join(old.inventory.profiles)})")
    template: dict[str, Any] = {}
    if like is not None:
        if doc.index(like) is None:
            raise ForgeError(f"{file}:{doc.doc.lc.key('nodes')[0] + 1}: nodes: no node '{like}' for --like (nodes: {', '.join(doc.names)})")
        template = _plain(doc.doc["nodes"][doc.index(like)])
    same = [i for i, n in enumerate(old.inventory.nodes) if n.profile == profile]
    after = same[-1] if same else len(old.inventory.nodes) - 1
    neighbour, indent = doc.load_node(after)

    values: dict[str, Any] = {"name": name, "profile": profile, "rack": rack}
    default_roles = ["gpu"] if old.inventory.profiles[profile].gpu else None
    values["roles"] = roles or template.get("roles") or default_roles
    if not values["roles"]:
        raise ForgeError(f"--roles is required: profile '{profile}' has no GPUs, so the node's roles cannot be guessed")
    merged_labels = {**template.get("labels", {}), **(labels or {})}
    if merged_labels:
        values["labels"] = merged_labels
    taken: list[dict[str, str]] = []
    if like is None and old.inventory.profiles[profile].gpu:
        taken = _profile_taints(old, profile)
    merged_taints = _merge_taints(template.get("taints", []) or taken, taints or [])
    if merged_taints:
        values["taints"] = merged_taints
    layout = mig_layout if mig_layout is not None else template.get("mig_layout")
    if layout and layout != NONE:
        values["mig_layout"] = layout

    node = _styled_node(values, neighbour)
    messages = [f"added {name} to {file} after {old.inventory.nodes[after].name}"]
    data, _ = parse_yaml(text, file)
    data["nodes"].insert(after + 1, values)
    doc = _with_expected(doc, old, data, *_totals_after(old, profile, +1), messages)
    new_text, at = doc.inserted_after(after, doc.render_node(node, indent, doc.dash_column(after)))
    messages[0] += f" (line {at + 1})"
    edit = _finish(doc, new_text, data, old, messages, neighbours)
    edit.messages.insert(1, "it carries " + carried(edit.new, name))
    if taken:
        edit.messages.insert(2, f"it takes the taint{'s' if len(taken) > 1 else ''} of its profile's GPU nodes: "
                                f"{', '.join(map(_taint_text, taken))} (drop with `forge node set ... --untaint KEY`)")
    edit.messages += _hints(edit.new, name)
    return edit


def remove_node(text: str, file: str, name: str, neighbours: Neighbours | None = None) -> Edit:
    old = _load_original(text, file, neighbours)
    doc = NodeText.parse(text, file)
    i = _require(doc, name, file)
    messages = [f"removed {name} from {file} (was line {doc.starts[i] + 1})", "it carried " + carried(old, name)]
    data, _ = parse_yaml(text, file)
    del data["nodes"][i]
    doc = _with_expected(doc, old, data, *_totals_after(old, old.inventory.nodes[i].profile, -1), messages)
    edit = _finish(doc, doc.removed(i), data, old, messages, neighbours)
    nodes, gpus = _gpu_totals(edit.new)
    edit.messages.append(f"{edit.new.inventory.cluster.name} now has {nodes} GPU nodes with {gpus} GPUs")
    return edit


def set_node(text: str, file: str, name: str, profile: str | None = None, rack: str | None = None,
             roles: list[str] | None = None, mig_layout: str | None = None, labels: dict[str, str] | None = None,
             unlabel: list[str] | None = None, taints: list[dict[str, str]] | None = None,
             untaint: list[str] | None = None, neighbours: Neighbours | None = None) -> Edit:
    if not any(v for v in (profile, rack, roles, mig_layout, labels, unlabel, taints, untaint)):
        raise ForgeError("nothing to set: give at least one of --profile, --rack, --roles, --mig-layout, --label, --unlabel, --taint, --untaint")
    old = _load_original(text, file, neighbours)
    doc = NodeText.parse(text, file)
    i = _require(doc, name, file)
    node, indent = doc.load_node(i)
    messages: list[str] = []

    for key, value in (("profile", profile), ("rack", rack)):
        if value is not None and node.get(key) != value:
            messages.append(f"{name}.{key}: {node.get(key)} -> {value}")
            node[key] = value
    if roles is not None:
        messages.append(f"{name}.roles: {', '.join(node['roles'])} -> {', '.join(roles)}")
        node["roles"] = flow_seq(roles, is_flow(node.get("roles"), True))
    if mig_layout is not None:
        profile_default = "(the profile's)"
        before = node.get("mig_layout", profile_default)
        if mig_layout == NONE:
            node.pop("mig_layout", None)
        else:
            _put(node, "mig_layout", mig_layout)
        messages.append(f"{name}.mig_layout: {before} -> {profile_default if mig_layout == NONE else mig_layout}")
    if labels or unlabel:
        _set_labels(node, name, labels or {}, unlabel or [], messages)
    if taints or untaint:
        _set_taints(node, name, taints or [], untaint or [], messages)

    data, _ = parse_yaml(text, file)
    data["nodes"][i] = _plain(node)
    new_profile = data["nodes"][i]["profile"]
    before_nodes, before_gpus = _totals_after(old, old.inventory.nodes[i].profile, -1)
    after = old.inventory.profiles.get(new_profile)
    extra = (1, after.gpu.count) if after and after.gpu else (0, 0)
    doc = _with_expected(doc, old, data, before_nodes + extra[0], before_gpus + extra[1], messages)
    return _finish(doc, doc.replaced(i, doc.render_node(node, indent, doc.dash_column(i))), data, old, messages, neighbours)


# ---- helpers ------------------------------------------------------------------------------------

def _require(doc: NodeText, name: str, file: str) -> int:
    i = doc.index(name)
    if i is None:
        raise ForgeError(f"{file}:{doc.doc.lc.key('nodes')[0] + 1}: nodes: no node named '{name}' (nodes: {', '.join(doc.names)})")
    return i


def _set_labels(node: Any, name: str, labels: dict[str, str], unlabel: list[str], messages: list[str]) -> None:
    current = node.get("labels")
    for key in unlabel:
        if not current or key not in current:
            raise ForgeError(f"--unlabel {key}: node '{name}' has no label {key}")
        del current[key]
        messages.append(f"{name}.labels: removed {key}")
    for key, value in labels.items():
        if current is None:
            current = flow_map({}, False)
            _put(node, "labels", current)
        messages.append(f"{name}.labels.{key}: {current.get(key, '(unset)')} -> {value}")
        current[key] = value
    if current is not None and not current:
        del node["labels"]


def _set_taints(node: Any, name: str, taints: list[dict[str, str]], untaint: list[str], messages: list[str]) -> None:
    current = node.get("taints")
    for spec in untaint:
        key, _, effect = spec.partition(":")
        hits = [t for t in (current or []) if t.get("key") == key and (not effect or t.get("effect") == effect)]
        if not hits:
            raise ForgeError(f"--untaint {spec}: node '{name}' has no such taint")
        for hit in hits:
            current.remove(hit)
        messages.append(f"{name}.taints: removed {spec}")
    for taint in taints:
        if current is None:
            current = flow_seq([], False)
            _put(node, "taints", current)
        style = is_flow(current[0], True) if current else True
        current.append(flow_map(taint, style))
        messages.append(f"{name}.taints: added {_taint_text(taint)}")
    if current is not None and not current:
        del node["taints"]


def _plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if isinstance(node, bool):
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, str):
        return str(node)
    return node


def _put(node: CommentedMap, key: str, value: Any) -> None:
    """Set a key where the schema orders it, after the keys that precede it."""
    if key in node:
        node[key] = value
        return
    rank = NODE_KEYS.index(key)
    pos = sum(1 for k in node if k in NODE_KEYS and NODE_KEYS.index(k) < rank)
    node.insert(pos, key, value)


def _merge_taints(base: list[dict[str, str]], extra: list[dict[str, str]]) -> list[dict[str, str]]:
    out = [dict(t) for t in base]
    for taint in extra:
        out = [t for t in out if (t["key"], t["effect"]) != (taint["key"], taint["effect"])] + [taint]
    return out


def _taint_text(taint: dict[str, str]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint['key']}{value}:{taint['effect']}"


def _styled_node(values: dict[str, Any], neighbour: CommentedMap) -> CommentedMap:
    """The new node in its neighbour's layout: key order, flow or block lists and mappings."""
    order = [k for k in neighbour if k in values] + [k for k in NODE_KEYS if k in values and k not in neighbour]
    node = CommentedMap()
    for key in order:
        value = values[key]
        if key == "roles":
            value = flow_seq(list(value), is_flow(neighbour.get("roles"), True))
        elif key == "labels":
            value = flow_map(dict(value), is_flow(neighbour.get("labels"), False))
        elif key == "taints":
            sample = neighbour.get("taints")
            items = [flow_map(dict(t), is_flow(sample[0] if sample else None, True)) for t in value]
            value = flow_seq(items, is_flow(sample, False))
        node[key] = value
    return node


def _hints(loaded: LoadedInventory, name: str) -> list[str]:
    """Labels and taints every other node of the same profile has and the new node lacks."""
    inv = loaded.inventory
    node = next(n for n in inv.nodes if n.name == name)
    peers = [n for n in inv.nodes if n.profile == node.profile and n.name != name]
    if not peers:
        return []
    hints = []
    common_taints = set.intersection(*({(t.key, t.value, t.effect) for t in p.taints} for p in peers))
    mine = {(t.key, t.value, t.effect) for t in node.taints}
    for key, value, effect in sorted(common_taints - mine):
        hints.append(f"note: every other {node.profile} node has taint {_taint_text({'key': key, 'value': value, 'effect': effect})}; "
                     f"{name} does not (add it with `forge node set ... --taint`, or use --like NODE)")
    common_labels = set.intersection(*(set(p.labels) for p in peers)) - set(node.labels)
    for key in sorted(common_labels):
        hints.append(f"note: every other {node.profile} node has label {key}; {name} does not")
    return hints
