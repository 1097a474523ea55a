"""The `forge` command group and the pipeline commands (errors: forge.commands.common)."""
from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import click

from forge.commands.common import EXIT_FOUND, ForgeGroup, cluster_option, root_option, user_errors


@click.group(cls=ForgeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="forge", prog_name="forge", message="%(prog)s %(version)s")
def main() -> None:
    """forge: hardware inventory in, validated per-cluster GitOps overlays out.

    Edit clusters/<cluster>/inventory.yaml, then `forge generate`; CI runs check, render, validate.
    """


jobs_option = click.option("--jobs", "-j", type=click.IntRange(1, 256), default=None,
                           help="Parallel workers (default: the CPU count).")


def output_options(func):
    """-o json (a versioned shape, docs/cli.md) and --format github (workflow annotations)."""
    func = click.option("--format", "fmt", type=click.Choice(["text", "github"]), default="text", show_default=True,
                        help="github: also print each failure as a GitHub Actions annotation (::error file=...,line=...::).")(func)
    return click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True,
                        help="json: one JSON document on stdout (docs/cli.md has its shape).")(func)


allow_stale_option = click.option("--allow-stale", is_flag=True,
                                  help="Work on the tree as it is on disk even when generate (or render) would change it "
                                       "(faults planted by hand, experiments); by default a stale tree is refused.")


@main.command()
@root_option
@jobs_option
@click.option("--discard-edits", is_flag=True,
              help="Overwrite files changed by hand in overlays/ and clusters/*/argocd/ (and delete files dropped there) "
                   "instead of refusing: per-cluster changes belong in clusters/<cluster>/overrides/.")
@cluster_option
@user_errors
def generate(root: Path, jobs: int | None, discard_edits: bool, only: tuple[str, ...]) -> None:
    """Write overlays/ and clusters/*/argocd/ from every inventory and its overrides (atomically,
    incrementally: only clusters whose inputs changed are built, only changed files are written).
    A generated file edited by hand, or a file dropped there, is refused with where it belongs.
    --cluster: only those clusters' files; every inventory is still read for the fleet-wide rules."""
    from forge.generate.incremental import generate as run
    from forge.progress import Progress

    progress = Progress("generate")
    outcome = run(root, jobs, progress, discard_edits, only)
    progress.finish(f"{len(outcome.built)} built, {outcome.written} files written")
    of = f" (--cluster {', '.join(dict.fromkeys(only))}: the others as they were)" if only else ""
    click.echo(f"generated {outcome.files} files from {outcome.clusters} clusters{of}")


@main.command()
@root_option
@output_options
@user_errors
def check(root: Path, output: str, fmt: str) -> None:
    """Fail, listing the files, if generated files differ from what the inventories and overrides
    give; files changed by hand are named with where the change belongs."""
    from forge.commands.check_output import run_check
    from forge.fleet import load_fleet

    _check_rings(root, load_fleet(root))
    sys.exit(run_check(root, output, fmt))


def _check_rings(root: Path, fleet) -> None:
    """clusters/rings.yaml (when there is one or a cluster names a ring) and the rings the
    clusters name, at their lines."""
    from forge.rollout.rings import RINGS_FILE, check_clusters, load_rings

    if (root / RINGS_FILE).is_file() or any(c.settings.rollout for c in fleet.clusters):
        check_clusters(fleet, load_rings(root))


@main.command()
@root_option
@jobs_option
@allow_stale_option
@cluster_option
@user_errors
def render(root: Path, jobs: int | None, allow_stale: bool, only: tuple[str, ...]) -> None:
    """kustomize build every overlay and bootstrap into build/rendered/<cluster>/. Refused when
    the overlays are not what generate makes of the inventories and overrides now. --cluster:
    only those clusters (the others' build/rendered/ folders stay as they are)."""
    from forge.files.folders import refuse_symlinks
    from forge.files.lock import repo_lock
    from forge.files.paths import RENDERED_DIR
    from forge.progress import Progress
    from forge.render.overlays import render_all

    if not allow_stale:
        from forge.commands.current import require_generated

        require_generated(root, "render", only)
    started = time.perf_counter()
    progress = Progress("render")
    with repo_lock(root, "render"):
        refuse_symlinks(root, [RENDERED_DIR.as_posix()])  # build/ and build/rendered/ are render's own
        counts = render_all(root, jobs=jobs, progress=progress, only=only)
    progress.finish()
    for cluster, count in sorted(counts.items()):
        click.echo(f"{cluster}: {count} objects")
    click.echo(f"rendered in {time.perf_counter() - started:.2f}s")


@main.command()
@root_option
@click.option("--upstream", type=click.Path(file_okay=False, path_type=Path), envvar="FORGE_UPSTREAM",
              help="Folder of upstream chart data (<chart>-<version>/ with values.yaml, values.schema.json, crds/). "
                   "Without it, custom resources and values files are reported unchecked. [env: FORGE_UPSTREAM]")
@click.option("--hydrated", is_flag=True,
              help="Validate build/hydrated/ (`forge hydrate`) instead: schemas and the CRDs the charts ship, "
                   "policies, values keys the chart ignores or sets to its default, what the charts' custom resources carry.")
@click.option("--component", "components", multiple=True, metavar="NAME",
              help="With --hydrated: only this component (repeatable).")
@cluster_option
@jobs_option
@allow_stale_option
@output_options
@user_errors
def validate(root: Path, upstream: Path | None, hydrated: bool, components: tuple[str, ...], jobs: int | None,
             allow_stale: bool, output: str, fmt: str, only: tuple[str, ...]) -> None:
    """Validate build/rendered/ and the values files: schemas, CRDs, chart values, policies.
    Clusters whose rendered files, values, inventory and upstream data did not change are not
    validated again: their stored result is replayed. Refused when the overlays are older than the
    inventories, or build/rendered/ older than the overlays."""
    from forge.progress import Progress
    from forge.validate.cached import validate_incremental

    if hydrated:
        from forge.commands.charts import validate_hydrated_command

        return validate_hydrated_command(root, components, upstream or None)
    if components:
        from forge.errors import ForgeError

        raise ForgeError("--component goes with --hydrated")

    if not allow_stale:
        from forge.commands.current import require_generated, require_rendered

        require_generated(root, "render and validate", only)
        require_rendered(root, only)
    from forge.validate.output import show

    progress = Progress("validate")
    report, validated = validate_incremental(root, upstream or None, jobs=jobs, progress=progress, only=only)
    progress.finish(f"{validated} validated, {progress.total - validated} unchanged")
    from forge.validate.run import override_exceptions

    report.warnings += override_exceptions(root, only)  # every run: not part of the cached result
    report.sort()
    show(root, report, output, fmt)
    if report.failures:
        sys.exit(EXIT_FOUND)


@main.command()
@root_option
@click.option("--nodes", type=click.IntRange(1, 10_000), default=100, show_default=True, help="GPU nodes per synthetic cluster.")
@click.option("--clusters", type=click.IntRange(1, 1000), default=10, show_default=True, help="Synthetic clusters.")
@click.option("--upstream", type=click.Path(file_okay=False, path_type=Path), envvar="FORGE_UPSTREAM",
              help="Upstream chart data, as for validate. [env: FORGE_UPSTREAM]")
@click.option("--svg", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Also write the table as a bar chart (SVG): each benchmark, forge's and bare kustomize's times, their ratio.")
@click.option("--twin/--no-twin", default=True, show_default=True,
              help="Also time the fleet in a box, warm, per cluster with scenarios: start, apply (objects/s), scenarios, stop.")
@click.option("--twin-only", is_flag=True, help="Time the fleet in a box only (no generate, render, validate).")
@jobs_option
@user_errors
def bench(root: Path, nodes: int, clusters: int, upstream: Path | None, svg: Path | None, twin: bool, twin_only: bool,
          jobs: int | None) -> None:
    """Time generate, render and validate (cold, warm, one-node change) and forge diff; print
    objects/s, peak memory and the ratios against bare kustomize; and, first, the box's apply
    rate and wall time per fleet (warm)."""
    from forge.bench.pipeline import Result, bench as run_bench
    from forge.rollout.bench import bench_rollout

    if svg is not None and not svg.parent.is_dir():  # before minutes of measuring, not after
        raise click.BadParameter(f"{svg.parent} is not a folder: give --svg a path in an existing folder", param_hint="--svg")
    if twin or twin_only:  # first: the last line stays the headline `ratio:`
        from forge.twin.bench import bench_twin

        bench_twin(root, upstream or None)
    if twin_only:
        return
    result = Result([])
    run_bench(root, nodes, clusters, upstream or None, jobs, extra=bench_rollout, result=result)
    if svg is not None:
        from forge.bench.chart import bench_svg
        from forge.commands.draw import write_svg

        write_svg(svg, bench_svg(result), "--svg")
        click.echo(f"wrote {svg}")


@main.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL (bash, zsh, fish). Load it with, e.g.
    `eval "$(forge completion bash)"` in ~/.bashrc, or write it where your shell looks for
    completions (docs/cli.md)."""
    from click.shell_completion import get_completion_class

    complete = get_completion_class(shell)(main, {}, "forge", "_FORGE_COMPLETE")
    click.echo(complete.source())


@main.group()
def cluster() -> None:
    """Clusters of the fleet (clusters/<name>/)."""


@cluster.command("new")
@root_option
@click.argument("name")
@click.option("--from", "source", required=True, metavar="CLUSTER", help="The cluster whose inventory is copied.")
@click.option("--generate/--no-generate", default=True, show_default=True, help="Generate the new cluster's files.")
@user_errors
def cluster_new(root: Path, name: str, source: str, generate: bool) -> None:
    """Copy CLUSTER's inventory to clusters/NAME/, renaming every name two clusters must not share
    (nodes, racks, buckets it writes, hosts, Argo CD project) and moving its rail CIDRs to free ones."""
    from forge.commands.cluster_new import new_cluster

    dest, said = new_cluster(root, name, source)
    click.echo(f"wrote {dest.relative_to(root).as_posix()} from {source}:")
    for line in said:
        click.echo(f"  {line}")
    if generate:
        from forge.generate.incremental import generate as run

        outcome = run(root)
        click.echo(f"generated {outcome.files} files from {outcome.clusters} clusters")


# Commands that live in their own modules; they import forge.commands.common, never this module.
from forge.commands.diff import diff  # noqa: E402  (forge diff: rendered changes and risks)
from forge.commands.node import node  # noqa: E402  (forge node add/remove/set)
from forge.commands.queues import queues  # noqa: E402  (forge queues: Kueue quotas per project)
from forge.commands.charts import charts, hydrate  # noqa: E402  (chart cache and hydration)
from forge.commands.twin import twin  # noqa: E402  (forge twin: the fleet in a box)
from forge.commands.draw import draw_command  # noqa: E402  (forge draw: the cluster as a picture)
from forge.commands.rollout import appsets, promote, rings  # noqa: E402  (forge promote: rings and gates)
from forge.commands.inventory_migrate import inventory  # noqa: E402  (forge inventory migrate: format versions)
from forge.commands.workflows import workflows  # noqa: E402  (forge workflows check: the engineers' Flyte code)

for _command in (charts, hydrate, diff, node, queues, twin, draw_command, promote, rings, appsets, inventory, workflows):
    main.add_command(_command)

if __name__ == "__main__":  # pragma: no cover
    main()
