"""Commands: `forge charts pull|lock`, `forge hydrate`, and the body of `forge validate --hydrated`."""
from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import click

from forge.commands.common import EXIT_FOUND, root_option, user_errors
from forge.errors import ForgeError

def _pins(root: Path, keys: tuple[str, ...]):
    """(chart pins, remote kustomize bases) the KEYS name: keys of charts/versions.yaml or names of
    components deployed from a remote base; no KEYS: all of both."""
    from forge.facts.versions import VERSIONS_FILE, chart_pins

    pins = chart_pins(root)
    bases = _remote_bases(root)
    unknown = [k for k in keys if k not in pins and k not in bases]
    if unknown:
        raise ForgeError(f"{VERSIONS_FILE}: no chart {', '.join(map(repr, unknown))} (have: {', '.join(pins)}; "
                         f"remote kustomize bases: {', '.join(bases) or 'none'})")
    if not keys:
        return list(pins.values()), list(bases.values())
    return [pins[k] for k in keys if k in pins], [bases[k] for k in keys if k in bases]


def _remote_bases(root: Path):
    """Component name -> RemoteKey, for every remote base an enabled component of a cluster uses."""
    from forge.fleet import components_of, load_fleet
    from forge.upstream.remote import RemoteKey

    out = {}
    for cluster in load_fleet(root).clusters:
        for component in components_of(cluster):
            base = component.remote_base(cluster)
            if base is not None:
                out.setdefault(component.name, RemoteKey.of(component.name, base))
    return out


@click.group()
def charts() -> None:
    """The pinned upstream charts: fetch them into the cache, record their digests."""


@charts.command()
@root_option
@click.argument("keys", nargs=-1)
@click.option("--from", "mirror", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Fill the cache from this local mirror (chart .tgz archives or unpacked chart folders) instead of the network.")
@click.option("--require-digest", is_flag=True, help="Fail for a chart whose digest is not recorded in charts/lock.yaml (or cannot be checked). Remote kustomize bases are pinned by git tag and have none.")
@user_errors
def pull(root: Path, keys: tuple[str, ...], mirror: Path | None, require_digest: bool) -> None:
    """Fetch the pinned charts (all, or the KEYS of charts/versions.yaml) into .cache/charts/,
    and the remote kustomize bases (KEYS: the component's name) into .cache/charts/kustomize/.

    With network: `helm pull` from each chart's repository (HTTP or OCI). Each archive's sha256 is
    checked against charts/lock.yaml, each chart's Chart.yaml against the pin. A remote base is a
    shallow `git clone` of its tag.
    """
    from forge.upstream.cache import ManyErrors, cache_root, pull as pull_charts
    from forge.upstream.remote import pull_remote

    pins, bases = _pins(root, keys)  # --require-digest is about charts: a remote base is pinned by its git tag
    done, problems = pull_charts(root, pins, mirror, require_digest) if pins else ([], [])
    for item in done:
        click.echo(item.line())
    fetched = 0
    for base in bases:
        try:
            click.echo(pull_remote(cache_root(root), base, mirror))
            fetched += 1
        except ForgeError as exc:
            problems += exc.lines()
    total = len(pins) + len(bases)
    what = "charts and kustomize bases" if bases else "charts"
    if problems:
        raise ManyErrors(problems + [f"{total - len(done) - fetched} of {total} {what} not fetched"])
    click.echo(f"{len(done)} charts{f' and {fetched} kustomize bases' if bases else ''} in {cache_root(root)}")


@charts.command()
@root_option
@click.argument("key")
@click.argument("version")
@click.option("--chart", "chart", required=True, type=click.Path(exists=True, path_type=Path),
              help="The new chart: a folder or the .tgz `helm pull REPO/CHART --version VERSION` wrote.")
@click.option("--upstream", type=click.Path(file_okay=False, path_type=Path), envvar="FORGE_UPSTREAM", required=True,
              help="The upstream data folder to write <chart>-<version>/ into. [env: FORGE_UPSTREAM]")
@click.option("--generate/--no-generate", default=True, show_default=True, help="Regenerate after the bump.")
@user_errors
def bump(root: Path, key: str, version: str, chart: Path, upstream: Path, generate: bool) -> None:
    """Bump chart KEY of charts/versions.yaml to VERSION: write the chart's reference data
    (values, schema, CRDs) into the upstream folder, set the pin (and its images' tags), regenerate,
    and say what changed in the chart's defaults and CRDs (docs/chart-bump.md)."""
    from forge.upstream.bump import bump as run

    target, said = run(root, key, version, chart, upstream)
    click.echo(f"wrote {target}")
    for line in said:
        click.echo(f"  {line}")
    if generate:
        from forge.generate.incremental import generate as regenerate

        outcome = regenerate(root)
        click.echo(f"generated {outcome.files} files ({len(outcome.built)} clusters rebuilt): "
                   "`forge diff --base HEAD` shows what changed in forge's output")


@charts.command()
@root_option
@user_errors
def lock(root: Path) -> None:
    """Write charts/lock.yaml: every pin with the sha256 of its cached archive (run after a pull
    you trust; a chart not cached from an archive keeps its recorded digest, or null)."""
    from forge.facts.versions import chart_pins
    from forge.upstream.cache import lock_digests
    from forge.upstream.lock import LOCK_FILE, write_lock

    entries, notes = lock_digests(root, list(chart_pins(root).values()))
    write_lock(root, entries)
    for note in notes:
        click.echo(note)
    click.echo(f"wrote {LOCK_FILE}: {sum(e.digest is not None for e in entries)} of {len(entries)} charts have a digest")


component_option = click.option(
    "--component", "components", multiple=True, metavar="NAME",
    help="Only this component (repeatable): only its chart need be cached; the others' hydrated files are left as they are.")


@click.command()
@root_option
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Parallel renders (default: CPU count).")
@component_option
@user_errors
def hydrate(root: Path, jobs: int | None, components: tuple[str, ...]) -> None:
    """Render every component as Argo CD does (helm template of the cached chart with our values,
    then the overlay) into build/hydrated/<cluster>/<component>.yaml."""
    from forge.upstream.hydrate import HYDRATED_DIR, hydrate_all

    started = time.perf_counter()
    counts = hydrate_all(root, jobs=jobs, only=frozenset(components) or None)
    for cluster, per in sorted(counts.items()):
        detail = ", ".join(f"{c} {n}" for c, n in sorted(per.items()))
        click.echo(f"{cluster}: {sum(per.values())} objects ({detail})")
    click.echo(f"hydrated into {HYDRATED_DIR}/ in {time.perf_counter() - started:.2f}s")


def validate_hydrated_command(root: Path, components: tuple[str, ...] = (), upstream: Path | None = None) -> None:
    """`forge validate --hydrated`: print failures and warnings; exit 1 on any failure."""
    from forge.upstream.check import validate_hydrated

    started = time.perf_counter()
    report = validate_hydrated(root, frozenset(components) or None, upstream)
    for failure in report.failures:
        click.echo(f"FAIL {failure.line()}", err=True)
    for warning in report.warnings:
        click.echo(f"warning: {warning.line()}", err=True)
    for item, count in sorted(Counter(report.unchecked).items()):
        click.echo(f"unchecked (no upstream data): {item}{f' x{count}' if count > 1 else ''}", err=True)
    for cluster, counts in sorted(report.per_cluster.items()):
        click.echo(f"{cluster}: {counts['objects']} objects ({counts['by_crd']} against CRDs the charts ship), "
                   f"{counts['keys']} values keys")
    click.echo(f"validated the hydrated output in {time.perf_counter() - started:.2f}s: "
               f"{len(report.failures)} failures, {len(report.warnings)} warnings")
    if report.failures:
        sys.exit(EXIT_FOUND)
