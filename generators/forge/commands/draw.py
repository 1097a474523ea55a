"""`forge draw CLUSTER`: the cluster as the inventory gives it, as one SVG picture.

Racks are columns, each node a box in its rack: its GPUs (a GPU its MIG layout cuts is drawn as
its slices), its NICs by role (compute NICs named by the rail they carry) and its NVMe drives.
Below, the queues' shares: one bar per GPU pool (Kueue flavor), split by each project's nominal
quota of its GPUs. Every shape carries a class and data- attributes naming what it stands for,
so the picture can be checked (and searched) as text. The output is deterministic.
"""
from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any, Iterable

import click

from forge.commands.common import root_option, user_errors
from forge.errors import ForgeError
from forge.files.svg import MARGIN, attrs as _attrs, rect as _rect, text as _text
from forge.model.cluster import ClusterModel, NodeModel

GPU, GAP, NODE_W, RACK_GAP = 18, 4, 200, 24
ROLE_COLOURS = {"compute": "#2e7d32", "storage": "#1565c0", "frontend": "#6a1b9a", "management": "#757575"}
PROJECT_COLOURS = ("#ef6c00", "#00838f", "#5e35b1", "#c62828", "#558b2f", "#ad1457", "#4e342e", "#283593")


def _slices(cluster: ClusterModel, node: NodeModel) -> dict[int, list[str]]:
    """GPU index -> the MIG profiles it is cut into (empty: a whole GPU)."""
    groups = cluster.settings.mig_layouts.get(node.mig_layout or "", [])
    cut: dict[int, list[str]] = {}
    for group in groups:
        indices = range(node.gpu_count) if group.gpus == "all" else group.gpus
        for i in indices:
            cut[i] = [p for p, n in sorted(group.profiles.items()) for _ in range(n)]
    return cut


def _rails_by_interface(cluster: ClusterModel, node: NodeModel) -> dict[str, str]:
    return {r.interface: r.name for r in cluster.rails if node.name in r.nodes}


def _node(cluster: ClusterModel, node: NodeModel, x: float, y: float) -> tuple[list[str], float]:
    """The node's shapes at (x, y), and its height."""
    out = [f'<g {_attrs(class_="node", data_node=node.name, data_profile=node.profile_name)}>']
    inner: list[str] = [_text(x + 6, y + 14, node.name, 12, font_weight="bold"),
                        _text(x + 6, y + 27, f"{node.profile_name} · {', '.join(node.roles)}", 9, fill="#555")]
    row = y + 34
    cut = _slices(cluster, node)
    per_row = (NODE_W - 12) // (GPU + GAP)
    for i in range(node.gpu_count):
        gx, gy = x + 6 + (i % per_row) * (GPU + GAP), row + (i // per_row) * (GPU + GAP)
        profiles = cut.get(i, [])
        title = f"{node.name} GPU {i}: {node.gpu.nvml_name}" + (f", MIG {' + '.join(profiles)}" if profiles else "")
        inner.append(f'<g {_attrs(class_="gpu", data_gpu=i, data_mig=len(profiles))}><title>{escape(title)}</title>')
        if profiles:
            width = GPU / len(profiles)
            inner += [_rect(gx + k * width, gy, width - 0.5, GPU, "#fbc02d", class_="mig-slice", data_profile=p)
                      for k, p in enumerate(profiles)]
        else:
            inner.append(_rect(gx, gy, GPU, GPU, "#76b900"))
        inner.append("</g>")
    if node.gpu_count:
        row += ((node.gpu_count - 1) // per_row + 1) * (GPU + GAP) + 2
    rails = _rails_by_interface(cluster, node)
    for spec, model in node.nics():
        for interface in spec.interfaces:
            label = rails.get(interface, interface)
            inner.append(_rect(x + 6, row, NODE_W - 12, 12, ROLE_COLOURS.get(spec.role, "#999"), class_="nic",
                               data_role=spec.role, data_interface=interface, data_rail=rails.get(interface, "")))
            inner.append(_text(x + 10, row + 10, f"{model.key} {interface} ({spec.role}){' · ' + label if label != interface else ''}",
                               8, fill="#fff"))
            row += 14
    for drive in node.nvme:
        inner.append(_rect(x + 6, row, NODE_W - 12, 10, "#8d6e63", class_="nvme", data_device=drive.device))
        inner.append(_text(x + 10, row + 8, f"NVMe {drive.device} {drive.size_gb} GB", 7, fill="#fff"))
        row += 12
    height = row - y + 4
    out.append(_rect(x, y, NODE_W, height, "#f5f5f5", stroke="#9e9e9e", rx=4))
    return out + inner + ["</g>"], height


def _racks(cluster: ClusterModel, top: float) -> tuple[list[str], float, float]:
    racks = sorted({n.rack for n in cluster.nodes})
    out, bottom = [], top
    for column, rack in enumerate(racks):
        x = MARGIN + column * (NODE_W + RACK_GAP)
        out.append(f'<g {_attrs(class_="rack", data_rack=rack)}>')
        out.append(_text(x, top + 12, rack, 13, font_weight="bold"))
        y = top + 20
        for node in (n for n in cluster.nodes if n.rack == rack):
            shapes, height = _node(cluster, node, x, y)
            out += shapes
            y += height + 8
        out.append("</g>")
        bottom = max(bottom, y)
    return out, MARGIN * 2 + len(racks) * (NODE_W + RACK_GAP), bottom


def _queues(cluster: ClusterModel, top: float, width: float) -> tuple[list[str], float]:
    facts = cluster.component_facts.get("kueue")
    if facts is None:
        return [], top
    out = [_text(MARGIN, top + 14, "Queues: each project's nominal GPUs per pool (Kueue flavor)", 13, font_weight="bold")]
    colours = {q.project: PROJECT_COLOURS[i % len(PROJECT_COLOURS)] for i, q in enumerate(facts.quotas)}
    y, bar = top + 24, max(width - 2 * MARGIN, 200)
    for pool in facts.capacity.pools:
        gpu_resources = [r for r in pool.resources if r.startswith("nvidia.com/")]
        for resource in gpu_resources:
            total = pool.resources[resource]
            out.append(_text(MARGIN, y + 10, f"{pool.flavor}: {total} x {resource}", 10))
            y, x = y + 14, MARGIN
            for q in facts.quotas:
                amount = q.flavors.get(pool.flavor, {}).get(resource)
                if not amount or not amount.nominal or not total:
                    continue
                w = bar * amount.nominal / total
                out.append(f'<g {_attrs(class_="share", data_flavor=pool.flavor, data_resource=resource, data_project=q.project, data_nominal=amount.nominal)}>'
                           f'<title>{escape(f"{q.project}: {amount.nominal} of {total}")}</title>'
                           + _rect(x, y, w, 18, colours[q.project]) + _text(x + 3, y + 13, f"{q.project} {amount.nominal}", 9, fill="#fff")
                           + "</g>")
                x += w
            y += 24
    return out, y


def draw(cluster: ClusterModel) -> str:
    """The SVG text of `cluster`."""
    title = (f"{cluster.name}: {len(cluster.nodes)} nodes, {cluster.gpu_count} GPUs, "
             f"{len({n.rack for n in cluster.nodes})} racks, {len(cluster.rails)} rails")
    body, width, bottom = _racks(cluster, MARGIN + 24)
    queues, bottom = _queues(cluster, bottom + 10, width)
    height = bottom + MARGIN
    lines: Iterable[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" {_attrs(width=width, height=height, viewBox=f"0 0 {width} {height}", font_family="sans-serif")}>',
        f"<!-- Generated by forge draw from {escape(cluster.source)}; never edit by hand. -->",
        _text(MARGIN, MARGIN + 6, title, 15, font_weight="bold", class_="title"),
        *body, *queues, "</svg>"]
    return "\n".join(lines) + "\n"


@click.command(name="draw")
@click.argument("cluster")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the SVG (default build/draw/CLUSTER.svg); - for standard output.")
@root_option
@user_errors
def draw_command(cluster: str, output: Path | None, root: Path) -> None:
    """Draw CLUSTER as an SVG: racks, nodes, GPUs (MIG slices), NICs by role and rail, NVMe, and
    the queues' shares of each GPU pool."""
    from forge.fleet import load_plan
    from forge.commands.node import inventory_file

    path, display = inventory_file(root, cluster)
    svg = draw(load_plan(path, display, cluster).cluster)
    if str(output) == "-":
        click.echo(svg, nl=False)
        return
    target = output or root / "build" / "draw" / f"{cluster}.svg"
    write_svg(target, svg, "-o")
    click.echo(f"wrote {target}")


def write_svg(target: Path, svg: str, option: str) -> None:
    """Write the picture whole or not at all (a partial file renamed over it); `option` is the
    flag that names the path, for the error."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(svg, encoding="utf-8")
        partial.replace(target)
    except OSError as exc:
        raise ForgeError(f"cannot write {target}: {exc.strerror or exc}: give {option} a writable path") from None
