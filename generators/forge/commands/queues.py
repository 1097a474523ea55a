"""`forge queues CLUSTER`: each project's Kueue quotas per flavor and resource, and the cluster's
capacity per flavor, as text or as a Markdown PR comment (when the inventory's shares change)."""
from __future__ import annotations

from pathlib import Path

import click

from forge.model.capacity import Capacity, quantity
from forge.commands.common import root_option, user_errors
from forge.errors import ForgeError
from forge.model.queues import CLOUD_QUEUE, ProjectQuotas, cohort_reach

Table = tuple[list[str], list[list[str]]]


def capacity_table(cap: Capacity, quotas: list[ProjectQuotas]) -> Table:
    rows = []
    for pool in cap.pools:
        racks = ",".join(pool.racks)
        for resource, amount in pool.resources.items():
            nominal = sum(q.flavors[pool.flavor][resource].nominal for q in quotas)
            rows.append([pool.flavor, f"{len(pool.nodes)}", racks, resource, pool.unit(resource),
                         quantity(resource, amount), quantity(resource, nominal)])
    return ["flavor", "nodes", "racks", "resource", "unit", "capacity", "nominal (all queues)"], rows


def project_table(cap: Capacity, q: ProjectQuotas, quotas: list[ProjectQuotas]) -> Table:
    """`reach`: the most the queue holds with the rest of the cohort idle, its largest admissible job."""
    rows = []
    for pool in cap.pools:
        for resource, quota in q.flavors[pool.flavor].items():
            rows.append([pool.flavor, resource, quantity(resource, quota.nominal), quantity(resource, quota.borrowing),
                         quantity(resource, quota.lending), quantity(resource, cohort_reach(quotas, pool.flavor, resource, q.project)),
                         quantity(resource, pool.resources[resource])])
    return ["flavor", "resource", "nominal", "borrowing limit", "lending limit", "reach", "capacity"], rows


def text(table: Table) -> list[str]:
    header, rows = table
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = {i for i, h in enumerate(header) if h in ("nodes", "capacity", "nominal", "borrowing limit", "lending limit", "reach", "nominal (all queues)")}
    fmt = lambda row: "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()  # noqa: E731
    return [fmt(header), fmt(["-" * w for w in widths]), *map(fmt, rows)]


def markdown(table: Table) -> list[str]:
    header, rows = table
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|",
            *("| " + " | ".join(r) + " |" for r in rows)]


def report(cluster, fmt: str) -> str:
    if "kueue" not in cluster.component_facts:
        raise ForgeError(f"cluster '{cluster.name}' runs no Kueue: add components.kueue to {cluster.source}")
    settings, facts = cluster.component_settings["kueue"], cluster.component_facts["kueue"]
    cap, quotas = facts.capacity, list(facts.quotas)
    render = markdown if fmt == "markdown" else text
    heading = (lambda s: f"### {s}") if fmt == "markdown" else (lambda s: s)
    lines = [heading(f"Kueue queues of {cluster.name}") if fmt == "markdown" else f"Kueue queues of {cluster.name}",
             "", f"{len(quotas)} ClusterQueues in cohort '{settings.cohort}'; MIG strategy {cluster.mig_strategy}; "
             f"whole GPUs {cap.whole_gpus}, GPU equivalents {float(sum(p.gpu_equivalents() for p in cap.pools)):g} of "
             f"{cluster.gpu_count} physical GPUs", "", heading("capacity per flavor"), *render(capacity_table(cap, quotas))]
    for q in quotas:
        lines += ["", heading(f"project {q.project} (share {q.share_percent}%)"), *render(project_table(cap, q, quotas))]
    if facts.cloud:
        lines += cloud_lines(facts.cloud, render, heading)
    return "\n".join(lines) + "\n"


def cloud_lines(cloud, render, heading) -> list[str]:
    """The MultiKueue manager's cloud queues: the burst cluster's capacity (its pools at their
    max_count) and each project's queue there, under the manager's flavor and queue names."""
    cap, quotas = cloud.capacity, list(cloud.quotas)
    lines = ["", heading(f"cloud queues: MultiKueue to {cloud.burst}"), "",
             f"LocalQueue '{CLOUD_QUEUE}' in every project-domain namespace feeds ClusterQueue <project>-{CLOUD_QUEUE} "
             f"(cohort '{cloud.burst}', AdmissionCheck '{cloud.burst}'); quotas as {cloud.burst}'s own queues",
             "", heading(f"capacity per flavor ({cloud.burst})"), *render(capacity_table(cap, quotas))]
    for q in quotas:
        lines += ["", heading(f"queue {q.project}-{CLOUD_QUEUE} (share {q.share_percent}% on {cloud.burst})"),
                  *render(project_table(cap, q, quotas))]
    return lines


JSON_VERSION = 1


def json_report(cluster) -> dict:
    """The same figures for programs (docs/cli.md): counts of each resource, memory in GiB."""
    report(cluster, "text")  # the same refusal for a cluster without Kueue
    settings, facts = cluster.component_settings["kueue"], cluster.component_facts["kueue"]
    cap, quotas = facts.capacity, list(facts.quotas)
    cloud = {"cloud": {"burst_cluster": facts.cloud.burst, "cohort": facts.cloud.burst, "local_queue": CLOUD_QUEUE,
                       **_figures(facts.cloud.capacity, list(facts.cloud.quotas))}} if facts.cloud else {}
    return {
        "kind": "forge.queues", "version": JSON_VERSION, "cluster": cluster.name, "cohort": settings.cohort,
        **_figures(cap, quotas), **cloud}


def _figures(cap: Capacity, quotas: list[ProjectQuotas]) -> dict:
    return {
        "flavors": [{"flavor": pool.flavor, "nodes": len(pool.nodes), "racks": list(pool.racks),
                     "capacity": {r: int(a) for r, a in pool.resources.items()}} for pool in cap.pools],
        "projects": [{"project": q.project, "share_percent": q.share_percent, "flavors": {
            flavor: {r: {"nominal": v.nominal, "borrowing": v.borrowing, "lending": v.lending,
                         "reach": cohort_reach(quotas, flavor, r, q.project)} for r, v in resources.items()}
            for flavor, resources in q.flavors.items()}} for q in quotas],
    }


@click.command()
@click.argument("cluster")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown"]), default="text", show_default=True,
              help="markdown: for a pull-request comment when the inventory's shares change.")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: one JSON document (kind forge.queues, version 1; docs/cli.md).")
@root_option
@user_errors
def queues(cluster: str, fmt: str, output: str, root: Path) -> None:
    """Each project's nominal quota, borrowing and lending limits per flavor (GPU pool) and resource,
    its reach (the most it can hold with the other queues idle: its largest admissible job), and the
    cluster's capacity per flavor, as the inventory gives them to Kueue's ClusterQueues."""
    from forge.fleet import load_plan
    from forge.commands.node import inventory_file

    path, display = inventory_file(root, cluster)
    model = load_plan(path, display, cluster).cluster
    if output == "json":
        import json

        click.echo(json.dumps(json_report(model), indent=2, sort_keys=True))
        return
    click.echo(report(model, fmt), nl=False)
