"""Commands: `forge charts pull|lock`, `forge hydrate`, and the body of `forge validate --hydrated`."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from forge.errors import ForgeError

EXIT_FOUND = 1
EXIT_ERROR = 2


def _root_option(func):
    return click.option(
        "--root", type=click.Path(file_okay=False, path_type=Path), default=".", show_default=True,
        envvar="FORGE_ROOT", help="The forge repository to work on.",
    )(func)


def _errors(func):
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ForgeError as exc:
            for line in exc.lines():
                click.echo(f"error: {line}", err=True)
            sys.exit(EXIT_ERROR)

    return wrapper


def _pins(root: Path, keys: tuple[str, ...]):
    from forge.charts import VERSIONS_FILE, chart_pins

    pins = chart_pins(root)
    unknown = [k for k in keys if k not in pins]
    if unknown:
        raise ForgeError(f"{VERSIONS_FILE}: no chart {', '.join(map(repr, unknown))} (have: {', '.join(pins)})")
    return [pins[k] for k in keys] if keys else list(pins.values())


@click.group()
def charts() -> None:
    """The pinned upstream charts: fetch them into the cache, record their digests."""


@charts.command()
@_root_option
@click.argument("keys", nargs=-1)
@click.option("--from", "mirror", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Fill the cache from this local mirror (chart .tgz archives or unpacked chart folders) instead of the network.")
@click.option("--require-digest", is_flag=True, help="Fail for a chart whose digest is not recorded in charts/lock.yaml (or cannot be checked).")
@_errors
def pull(root: Path, keys: tuple[str, ...], mirror: Path | None, require_digest: bool) -> None:
    """Fetch the pinned charts (all, or the KEYS of charts/versions.yaml) into .cache/charts/.

    With network: `helm pull` from each chart's repository (HTTP or OCI). Each archive's sha256 is
    checked against charts/lock.yaml, each chart's Chart.yaml against the pin.
    """
    from forge.upstream.cache import ManyErrors, cache_root, pull as pull_charts

    pins = _pins(root, keys)
    done, problems = pull_charts(root, pins, mirror, require_digest)
    for item in done:
        click.echo(item.line())
    if problems:
        raise ManyErrors(problems + [f"{len(pins) - len(done)} of {len(pins)} charts not fetched"])
    click.echo(f"{len(done)} charts in {cache_root(root)}")


@charts.command()
@_root_option
@_errors
def lock(root: Path) -> None:
    """Write charts/lock.yaml: every pin with the sha256 of its cached archive (run after a pull
    you trust; a chart not cached from an archive keeps its recorded digest, or null)."""
    from forge.charts import chart_pins
    from forge.upstream.cache import lock_digests
    from forge.upstream.lock import LOCK_FILE, write_lock

    entries, notes = lock_digests(root, list(chart_pins(root).values()))
    write_lock(root, entries)
    for note in notes:
        click.echo(note)
    click.echo(f"wrote {LOCK_FILE}: {sum(e.digest is not None for e in entries)} of {len(entries)} charts have a digest")


@click.command()
@_root_option
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Parallel renders (default: CPU count).")
@_errors
def hydrate(root: Path, jobs: int | None) -> None:
    """Render every component as Argo CD does (helm template of the cached chart with our values,
    then the overlay) into build/hydrated/<cluster>/<component>.yaml."""
    from forge.upstream.hydrate import HYDRATED_DIR, hydrate_all

    started = time.perf_counter()
    counts = hydrate_all(root, jobs=jobs)
    for cluster, per in sorted(counts.items()):
        detail = ", ".join(f"{c} {n}" for c, n in sorted(per.items()))
        click.echo(f"{cluster}: {sum(per.values())} objects ({detail})")
    click.echo(f"hydrated into {HYDRATED_DIR}/ in {time.perf_counter() - started:.2f}s")


def validate_hydrated_command(root: Path) -> None:
    """`forge validate --hydrated`: print failures and warnings; exit 1 on any failure."""
    from forge.upstream.check import validate_hydrated

    started = time.perf_counter()
    report = validate_hydrated(root)
    for failure in report.failures:
        click.echo(f"FAIL {failure.line()}", err=True)
    for warning in report.warnings:
        click.echo(f"warning: {warning.line()}", err=True)
    for cluster in sorted(report.objects):
        click.echo(f"{cluster}: {report.objects[cluster]} objects ({report.by_crd.get(cluster, 0)} against CRDs the charts ship), "
                   f"{report.keys.get(cluster, 0)} values keys")
    click.echo(f"validated the hydrated output in {time.perf_counter() - started:.2f}s: "
               f"{len(report.failures)} failures, {len(report.warnings)} warnings")
    if report.failures:
        sys.exit(EXIT_FOUND)
