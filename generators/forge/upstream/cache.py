"""The chart cache (git-ignored `.cache/charts/`): each pinned chart, unpacked, ready for `helm template`.

Layout, one folder per pin, swapped into place whole (a chart is in the cache completely or not at all):

    .cache/charts/<chart>-<version>/
        chart/          the chart, unpacked (Chart.yaml at its top), what `forge hydrate` renders
        archive.tgz     the archive it came from, when it came from one (what the digest is of)
        source.yaml     where it came from, its digest, and whether that digest was checked

Filled by `forge charts pull`: with network, `helm pull` from the pinned repository (HTTP or OCI);
air-gapped, `--from <mirror>`: a folder of chart archives (`<chart>-<version>.tgz`, as `helm pull`
names them) or unpacked charts (`<chart>/`, `<chart>-<version>/`, or `<chart>-<version>/<chart>/`).
Either way the chart's own Chart.yaml must name the pinned chart and version, and an archive must
have the digest charts/lock.yaml records. An unpacked folder has no archive to hash: it goes in
unverified, and says so.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from forge.facts.versions import VERSIONS_FILE, ChartPin
from forge.errors import ForgeError
from forge.files.folders import swap_in
from forge.tools import helm_command
from forge.upstream import members
from forge.upstream.chart import archive_meta, chart_meta
from forge.upstream.lock import LOCK_FILE, LockEntry, file_digest, read_lock, recorded_digest

CACHE_DIR = Path(".cache/charts")
SOURCE_FILE = "source.yaml"
ARCHIVE_FILE = "archive.tgz"


class ManyErrors(ForgeError):
    """Several problems, one printed line each."""

    def __init__(self, lines: list[str]):
        self._lines = lines
        super().__init__("\n".join(lines))

    def lines(self) -> list[str]:
        return list(self._lines)


def cache_root(root: Path) -> Path:
    """$FORGE_CHART_CACHE (e.g. a CI cache shared by checkouts), else .cache/charts in the repo."""
    env = os.environ.get("FORGE_CHART_CACHE")
    return Path(env) if env else root / CACHE_DIR


def entry_dir(root: Path, pin: ChartPin) -> Path:
    return cache_root(root) / pin.data_dir_name


def fetch_hint(pin: ChartPin) -> str:
    """The commands that put a pin's chart in the cache."""
    return f"`forge charts pull {pin.key}` (without network: `forge charts pull --from <mirror> {pin.key}`)"


def cached_chart(root: Path, pin: ChartPin) -> Path | None:
    """The unpacked chart folder for a pin, or None when the cache lacks it (or holds another one)."""
    folder = entry_dir(root, pin) / "chart"
    chart_yaml = folder / "Chart.yaml"
    if not chart_yaml.is_file():
        return None
    meta = yaml.safe_load(chart_yaml.read_text(encoding="utf-8")) or {}
    if str(meta.get("name")) != pin.chart or str(meta.get("version")) != pin.version:
        return None
    return folder


def cached_archive(root: Path, pin: ChartPin) -> Path | None:
    path = entry_dir(root, pin) / ARCHIVE_FILE
    return path if path.is_file() and cached_chart(root, pin) else None


@dataclass(frozen=True)
class Pulled:
    pin: ChartPin
    source: str
    digest: str | None  # of the archive; None for an unpacked folder
    verified: bool  # the digest matched charts/lock.yaml
    note: str | None  # why it is not verified

    def line(self) -> str:
        state = "verified" if self.verified else f"UNVERIFIED: {self.note}"
        return f"{self.pin.key}: {self.pin.chart} {self.pin.version} from {self.source} ({state})"


def _check_meta(meta: dict, pin: ChartPin, origin: str) -> None:
    name, version = str(meta.get("name")), str(meta.get("version"))
    if (name, version) != (pin.chart, pin.version):
        raise ForgeError(
            f"{origin}: is chart '{name}' version '{version}', but {VERSIONS_FILE} pins "
            f"'{pin.chart}' version '{pin.version}' (key '{pin.key}')"
        )


def _in_mirror(mirror: Path, pin: ChartPin) -> tuple[Path, bool]:
    """(path, is_archive) of the pin's chart in a mirror folder."""
    stem = pin.data_dir_name
    archives = sorted(mirror.rglob(f"{stem}.tgz"))
    if archives:
        return archives[0], True
    for folder in (mirror / stem / pin.chart, mirror / stem, mirror / pin.chart):
        if (folder / "Chart.yaml").is_file():
            return folder, False
    others = sorted(p.relative_to(mirror).as_posix() for p in mirror.rglob(f"{pin.chart}*")
                    if p.name.endswith(".tgz") or (p / "Chart.yaml").is_file())
    seen = f"; it has: {', '.join(others[:5])}" if others else ""
    raise ForgeError(
        f"{mirror}: no {pin.chart} {pin.version} (looked for {stem}.tgz at any depth, and the folders "
        f"{stem}/{pin.chart}/, {stem}/, {pin.chart}/ holding a Chart.yaml){seen}"
    )


def _helm_pull(root: Path, pin: ChartPin, dest: Path) -> Path:
    helm = helm_command(root)
    if pin.repo.startswith("oci://"):
        cmd = [*helm, "pull", f"{pin.repo.rstrip('/')}/{pin.chart}", "--version", pin.version, "--destination", str(dest)]
    else:
        cmd = [*helm, "pull", pin.chart, "--repo", pin.repo, "--version", pin.version, "--destination", str(dest)]
    proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8")
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        raise ForgeError(f"{pin.key}: `helm pull` of {pin.chart} {pin.version} from {pin.repo} failed: {detail}"
                         f" (without network: forge charts pull --from <mirror>)")
    archives = sorted(dest.glob("*.tgz"))
    if len(archives) != 1:
        raise ForgeError(f"{pin.key}: `helm pull` left {len(archives)} archives, expected one")
    return archives[0]


def _unpack(archive: Path, chart: Path) -> None:
    """The archive's chart written under `chart`, from the files forge.upstream.members read and
    checked (plain relative names, regular files, bounded): no path is built from a name before
    it is checked, and the archive is read as it was checked (any compression `archive_meta` reads)."""
    origin = str(archive)
    files = members.under_top(members.from_archive(members.read_archive(archive), origin), origin)
    if "Chart.yaml" not in files:
        raise ForgeError(f"{archive}: a chart archive holds one top folder with a Chart.yaml")
    _write(files, chart)


def _write(files: dict[str, bytes], chart: Path) -> None:
    for name, body in files.items():
        (chart / name).parent.mkdir(parents=True, exist_ok=True)
        (chart / name).write_bytes(body)


def pull_one(root: Path, pin: ChartPin, lock: dict, mirror: Path | None = None, require_digest: bool = False) -> Pulled:
    """Fetch one chart into the cache (whole, or not at all)."""
    expected, _ = recorded_digest(lock, pin)
    archive = cached_archive(root, pin)
    if expected and archive and file_digest(archive) == expected:
        return Pulled(pin, f"the cache ({entry_dir(root, pin)})", expected, True, None)  # already there, verified
    cache = cache_root(root)
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{pin.data_dir_name}.", dir=cache))
    try:
        if mirror is not None:
            found, is_archive = _in_mirror(mirror, pin)
            source = str(found)
        else:
            found, is_archive = _helm_pull(root, pin, staging), True
            source = pin.repo
        digest, verified, note = None, False, None
        if is_archive:
            _check_meta(archive_meta(found), pin, f"{found}: Chart.yaml")
            digest = file_digest(found)
            expected, why = recorded_digest(lock, pin)
            if expected is not None and digest != expected:
                raise ForgeError(f"{pin.key}: digest mismatch: {found} is {digest}, but {LOCK_FILE} records {expected}")
            verified, note = expected is not None, why
            shutil.copyfile(found, staging / ARCHIVE_FILE)
            if found.parent == staging:
                found.unlink()
            _unpack(staging / ARCHIVE_FILE, staging / "chart")
        else:
            # Read as `forge charts bump` reads a folder (forge.upstream.members): a copy that
            # followed links cached a values.yaml linked to a kubeconfig, and helm rendered it.
            files = members.from_folder(found)
            _check_meta(chart_meta(files, str(found)), pin, f"{found}/Chart.yaml")
            note = "an unpacked folder has no archive to check a digest against"
            _write(files, staging / "chart")
        if require_digest and not verified:
            raise ForgeError(f"{pin.key}: no verified digest ({note}) and --require-digest was given")
        record = {"chart": pin.chart, "version": pin.version, "source": source, "digest": digest, "verified": verified}
        (staging / SOURCE_FILE).write_text(yaml.safe_dump(record, sort_keys=False))
        final = entry_dir(root, pin)
        swap_in(staging, final)
        return Pulled(pin, source, digest, verified, note)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def pull(root: Path, pins: list[ChartPin], mirror: Path | None = None,
         require_digest: bool = False) -> tuple[list[Pulled], list[str]]:
    """Fetch every pin; each chart goes in whole. Returns what was fetched and, together, every
    problem of the rest (the caller fails when there is any)."""
    if mirror is not None and not mirror.is_dir():
        raise ForgeError(f"--from {mirror}: not a folder")
    lock = read_lock(root)
    done, problems = [], []
    for pin in pins:
        try:
            done.append(pull_one(root, pin, lock, mirror, require_digest))
        except ForgeError as exc:
            problems += exc.lines()
    return done, problems


def lock_digests(root: Path, pins: list[ChartPin]) -> tuple[list[LockEntry], list[str]]:
    """The lock for the current pins: each digest from the cached archive when there is one, else
    the digest already recorded for the same pin, else null. Returns the entries and notes."""
    lock = read_lock(root)
    entries, notes = [], []
    for pin in pins:
        recorded, _ = recorded_digest(lock, pin)
        archive = cached_archive(root, pin)
        digest = file_digest(archive) if archive else None
        if digest and recorded and digest != recorded:
            raise ForgeError(f"{pin.key}: the cached archive is {digest} but {LOCK_FILE} records {recorded}: "
                             f"the cache is not what was locked; delete {entry_dir(root, pin)} and pull again")
        if digest is None:
            why = ("its cache entry came from an unpacked folder" if cached_chart(root, pin)
                   else "it is not in the cache")
            if recorded:
                notes.append(f"{pin.key}: kept the recorded digest ({why})")
            else:
                notes.append(f"{pin.key}: digest stays null: {why} (fetch its archive first: {fetch_hint(pin)})")
        elif not recorded:
            notes.append(f"{pin.key}: recorded {digest} from {archive} (check it is the archive you trust before committing)")
        entries.append(LockEntry(pin.key, pin.repo, pin.chart, pin.version, digest or recorded))
    return entries, notes
