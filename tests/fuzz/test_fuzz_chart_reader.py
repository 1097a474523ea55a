"""Property-based fuzzing of forge's chart archive reader: `load_chart` (the values checks,
`forge charts bump`) and `pull_one` from a mirror (`forge charts pull`: the archive is checked,
then unpacked into the chart cache), fed archives built in memory: members named with `..`, an
absolute path or a control character, links, devices and FIFOs, duplicate names, sizes declared
far beyond the data, another compression or none, truncated or corrupt gzip, random bytes, and
byte flips of a valid chart (the widget fixture of tests/upstream, with its subchart).

Each archive is read, or refused with a ForgeError naming it; never another exception, never a
hang, and no file is written anywhere but the chart cache (the tmp folder's contents are checked
after each example). FORGE_FUZZ_EXAMPLES examples per property (tests.fuzz.common).
"""
from __future__ import annotations

import gzip
import io
import os
import shutil
import tarfile
import time
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from forge.errors import ForgeError
from forge.upstream.cache import CACHE_DIR, pull_one
from forge.upstream.chart import load_chart
from forge.facts.versions import ChartPin
from tests.fuzz.common import FUZZ, LOAD_CPU_SECONDS, bounded, mutate_bytes
from tests.helpers import REPO

FIXTURE = REPO / "tests/upstream/charts/widget"
PIN = ChartPin("widget", "https://charts.example.com", "widget", "1.2.3")
ARCHIVE = f"{PIN.data_dir_name}.tgz"
FILES = {f"widget/{p.relative_to(FIXTURE).as_posix()}": p.read_bytes() for p in sorted(FIXTURE.rglob("*")) if p.is_file()}


def _tar(members: list[tuple[tarfile.TarInfo, bytes]], compression: str = "gz") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=f"w:{compression}" if compression else "w", format=tarfile.GNU_FORMAT) as tar:
        for info, body in members:
            tar.addfile(info, io.BytesIO(body) if info.isreg() else None)
    return out.getvalue()


def _file(name: str, body: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(body), 0o644, 0
    return info, body


VALID_TAR = _tar([_file(n, b) for n, b in FILES.items()], "")
VALID = gzip.compress(VALID_TAR, mtime=0)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fuzz-charts")
    saved = os.environ.pop("FORGE_CHART_CACHE", None)  # the cache goes under root/.cache/charts
    yield root
    if saved is not None:
        os.environ["FORGE_CHART_CACHE"] = saved


def written(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def check(root: Path, data: bytes) -> None:
    """`data` as a chart archive: through load_chart, then through pull_one from a mirror."""
    for leftover in root.iterdir():
        shutil.rmtree(leftover) if leftover.is_dir() and not leftover.is_symlink() else leftover.unlink()
    (root / "mirror").mkdir()
    (root / "mirror" / ARCHIVE).write_bytes(data)
    before = written(root)
    started = time.process_time()
    try:
        with bounded():
            try:
                load_chart(root / "mirror" / ARCHIVE)
                event("read by load_chart")
            except ForgeError as exc:
                assert str(exc).strip() and ARCHIVE in str(exc), str(exc)
                event("refused by load_chart")
            try:
                pull_one(root, PIN, {}, mirror=root / "mirror")
                event("pulled into the cache")
            except ForgeError as exc:
                assert str(exc).strip() and (ARCHIVE in str(exc) or PIN.key in str(exc)), str(exc)
                event("refused by pull_one")
    finally:
        assert time.process_time() - started < LOAD_CPU_SECONDS
    cache = f"{CACHE_DIR.as_posix()}/"
    outside = sorted(p for p in written(root) - before if not (p.startswith(cache) or cache.startswith(p + "/")))
    assert not outside, f"written outside the chart cache: {outside}"
    for path in (root / CACHE_DIR).rglob("*") if (root / CACHE_DIR).exists() else ():
        assert not path.is_symlink() and (path.is_dir() or path.is_file()), f"{path}: not a regular file in the cache"


# ---- members: hostile names, kinds and sizes --------------------------------------------------

NAMES = st.one_of(
    st.sampled_from(sorted(FILES)),
    st.sampled_from(["widget/../evil.yaml", "../evil.yaml", "/tmp/evil.yaml", "widget//values.yaml", "widget/./x",
                     "widget/templates/../../../evil", "widget\\..\\evil", "widget/\x00x", "widget/a\nb", "",
                     "widget/", "other/Chart.yaml", "widget/charts/sidecar/../../../evil", ".", "..", "widget/.."]),
    st.text(max_size=20).map(lambda s: f"widget/{s}"),
)
KINDS = st.sampled_from([tarfile.REGTYPE, tarfile.REGTYPE, tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE,
                         tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE, tarfile.CONTTYPE])
TARGETS = st.sampled_from(["/etc/passwd", "../../evil", "widget/values.yaml", "values.yaml", "/dev/zero", ""])


@st.composite
def member(draw) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(draw(NAMES))
    info.type, info.mtime, info.mode = draw(KINDS), 0, draw(st.sampled_from([0o644, 0o755, 0o4755, 0o000, 0o777]))
    body = draw(st.binary(max_size=64) | st.sampled_from(sorted(FILES.values())))
    if info.isreg():
        info.size = len(body)
    else:
        body, info.linkname = b"", draw(TARGETS)
    return info, body


@st.composite
def archive(draw) -> bytes:
    members = [_file(n, b) for n, b in FILES.items() if draw(st.booleans()) or n.endswith("Chart.yaml")]
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        members.insert(draw(st.integers(0, len(members))), draw(member()))
    data = _tar(members, draw(st.sampled_from(["gz", "gz", "gz", "", "bz2", "xz"])))
    if draw(st.booleans()):  # a size declared far beyond the data, or a truncated stream
        data = data[:draw(st.integers(0, len(data)))]
    return data


@FUZZ
@given(data=archive())
def test_hostile_chart_archive_members_are_read_or_refused(workdir, data):
    check(workdir, data)


# ---- bytes: a valid chart archive, flipped; its tar flipped then gzipped; random bytes --------

def _declared_huge(data: bytes, at: int) -> bytes:
    """The size field (octal, at offset 124 of a header) of the header before `at` made huge."""
    header = (min(at, len(data) - 512) // 512) * 512
    return data[:header + 124] + b"77777777777\x00" + data[header + 136:]


@FUZZ
@given(layer=st.sampled_from(["gzip", "tar", "tar", "random", "size"]), rounds=st.integers(min_value=1, max_value=6),
       data=st.data())
def test_byte_mutations_of_a_chart_archive_are_read_or_refused(workdir, layer, rounds, data):
    if layer == "random":
        check(workdir, data.draw(st.binary(max_size=2048) | st.binary(max_size=64).map(lambda b: VALID[:20] + b)))
        return
    if layer == "size":
        check(workdir, gzip.compress(_declared_huge(VALID_TAR, data.draw(st.integers(0, len(VALID_TAR)))), mtime=0))
        return
    content = VALID if layer == "gzip" else VALID_TAR
    for _ in range(rounds):
        content = mutate_bytes(content, data.draw)
    check(workdir, content if layer == "gzip" else gzip.compress(content, mtime=0))
