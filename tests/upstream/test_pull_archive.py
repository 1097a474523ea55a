"""`forge charts pull` from a mirror unpacks the archive it checked, from the files it checked
(forge.upstream.members): found by tests/fuzz/test_fuzz_chart_reader.py, an uncompressed or xz
archive passed the check and was then a tarfile.ReadError traceback, and a member that is both a
directory and a file was an IsADirectoryError traceback."""
from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from forge.errors import ForgeError
from forge.upstream.cache import CACHE_DIR, pull_one
from forge.upstream.chart import load_chart
from forge.facts.versions import ChartPin

PIN = ChartPin("widget", "https://charts.example.com", "widget", "1.2.3")
CHART = b"apiVersion: v2\nname: widget\nversion: 1.2.3\n"


def mirror(tmp: Path, members: list[tuple[str, bytes | None]], mode: str = "w:gz") -> Path:
    (tmp / "mirror").mkdir()
    with tarfile.open(tmp / "mirror/widget-1.2.3.tgz", mode) as tar:
        for name, body in [("widget/Chart.yaml", CHART), *members]:
            info = tarfile.TarInfo(name)
            if body is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(body)
                tar.addfile(info, io.BytesIO(body))
    return tmp / "mirror"


@pytest.fixture(autouse=True)
def _cache_in_repo(monkeypatch):
    monkeypatch.delenv("FORGE_CHART_CACHE", raising=False)


@pytest.mark.parametrize("mode", ["w", "w:xz", "w:bz2"])
def test_an_archive_in_another_compression_is_pulled_as_it_was_checked(tmp_path, mode):
    pull_one(tmp_path, PIN, {}, mirror=mirror(tmp_path, [("widget/values.yaml", b"a: 1\n")], mode))
    chart = tmp_path / CACHE_DIR / "widget-1.2.3/chart"
    assert (chart / "Chart.yaml").read_bytes() == CHART and (chart / "values.yaml").read_bytes() == b"a: 1\n"


def test_a_directory_member_named_as_a_file_is_pulled_as_the_file(tmp_path):
    pull_one(tmp_path, PIN, {}, mirror=mirror(tmp_path, [("widget/values.yaml", None), ("widget/values.yaml", b"a: 1\n")]))
    assert (tmp_path / CACHE_DIR / "widget-1.2.3/chart/values.yaml").read_bytes() == b"a: 1\n"


@pytest.mark.parametrize("members, message", [
    ([("widget/a", b"x"), ("widget/a/b", b"y")], "member widget/a is both a file and a folder of other members"),
    ([("widget/values.yaml", b"a: 1\n"), ("widget/values.yaml", b"a: 2\n")], "member widget/values.yaml is given twice"),
])
def test_an_archive_forge_cannot_unpack_is_one_error_and_nothing_is_cached(tmp_path, members, message):
    with pytest.raises(ForgeError, match=message):
        pull_one(tmp_path, PIN, {}, mirror=mirror(tmp_path, members))
    assert not (tmp_path / CACHE_DIR / "widget-1.2.3").exists()


def test_a_corrupt_compressed_stream_is_one_error(tmp_path):
    """A byte inserted anywhere in a chart archive (the widget fixture): read, or 'not a chart
    archive', never a zlib.error traceback (found by the chart-reader fuzz: a corrupt deflate block
    is met while reading a member, after its header was read)."""
    fixture = Path(__file__).parent / "charts/widget"
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for file in sorted(p for p in fixture.rglob("*") if p.is_file()):
            info = tarfile.TarInfo(f"widget/{file.relative_to(fixture).as_posix()}")
            info.size, info.mtime = file.stat().st_size, 0
            tar.addfile(info, io.BytesIO(file.read_bytes()))
    good, refused = gzip.compress(out.getvalue(), mtime=0), 0
    path = tmp_path / "widget-1.2.3.tgz"
    for at in range(10, len(good), 2):
        path.write_bytes(good[:at] + b"\x00" + good[at:])
        try:
            load_chart(path)
        except ForgeError as exc:
            refused += "not a chart archive" in str(exc)
    assert refused
