"""charts/lock.yaml is read with the guards of every data file: a malformed lock is one
`charts/lock.yaml:<line>: <key>: message` per problem, never a traceback (found by
tests/fuzz/test_fuzz_datafiles.py: a byte that is not UTF-8 was a UnicodeDecodeError traceback)."""
from __future__ import annotations

import pytest

from forge.errors import ForgeError
from forge.upstream.lock import read_lock

GOOD = """\
charts:
  widget:
    repo: https://charts.example.com
    chart: widget
    version: 1.2.3
    digest: null
"""


@pytest.mark.parametrize("text, expected", [
    (b"\x80" + GOOD.encode(), "charts/lock.yaml:1: <top>: byte 0x80 at offset 0"),
    (GOOD.replace("digest: null", "digest: !!timestamp 2026-13-45").encode(), "charts/lock.yaml:6: <top>: cannot read"),
    (GOOD.replace("digest: null", "digest: sha256:1234").encode(), "charts/lock.yaml:6: charts.widget.digest: must be"),
    (GOOD.replace("    chart: widget\n", "").encode(), "charts/lock.yaml:2: charts.widget.chart: missing or not text"),
    (b"charts:\n  - widget\n", "charts/lock.yaml:1: charts: the chart lock is a mapping"),
    (b"charts:\n  widget: 7\n", "charts/lock.yaml:2: charts.widget: an entry is a mapping"),
    (b"a: &a [*a]\n", "charts/lock.yaml:1: "),
])
def test_a_malformed_lock_is_an_error_naming_file_and_line(tmp_path, text, expected):
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts/lock.yaml").write_bytes(text)
    with pytest.raises(ForgeError) as caught:
        read_lock(tmp_path)
    assert str(caught.value).startswith(expected), str(caught.value)


def test_a_good_lock_is_read(tmp_path):
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts/lock.yaml").write_text(GOOD)
    assert read_lock(tmp_path)["widget"].version == "1.2.3"
    assert read_lock(tmp_path / "none") == {}
