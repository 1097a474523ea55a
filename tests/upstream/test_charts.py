"""forge charts pull / lock: the chart cache is filled whole, from helm or a mirror, and checked
against the pins (name, version) and the lock (digest). Real helm; the widget chart is a test
fixture (tests/upstream/charts/README.md), not an upstream chart."""
from __future__ import annotations

import hashlib
import http.server
import subprocess
import threading
from functools import partial
from pathlib import Path

import yaml

from forge.facts.versions import chart_pins
from forge.tools import helm_command
from tests.helpers import REPO, forge
from tests.upstream.conftest import CHARTS, copy_chart, package


def sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def write_lock(repo: Path, digest: str | None, version: str = "1.2.3") -> None:
    lock = {"charts": {"widget": {"repo": "http://127.0.0.1:9/charts", "chart": "widget", "version": version, "digest": digest}}}
    (repo / "charts/lock.yaml").write_text(yaml.safe_dump(lock))


def test_pull_from_a_mirror_archive_then_lock_then_verified(widget_repo: Path, mirror: Path):
    archive = mirror / "widget-1.2.3.tgz"
    result = forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        f"widget: widget 1.2.3 from {archive} (UNVERIFIED: charts/lock.yaml has no entry for 'widget')")
    entry = widget_repo / ".cache/charts/widget-1.2.3"
    assert sorted(p.name for p in entry.iterdir()) == ["archive.tgz", "chart", "source.yaml"]
    assert (entry / "chart/templates/widget.yaml").is_file() and (entry / "chart/charts/sidecar/Chart.yaml").is_file()
    assert yaml.safe_load((entry / "source.yaml").read_text()) == {
        "chart": "widget", "version": "1.2.3", "source": str(archive), "digest": sha256(archive), "verified": False}

    result = forge(widget_repo, "charts", "lock")
    assert result.exit_code == 0, result.output
    assert f"widget: recorded {sha256(archive)} from {entry / 'archive.tgz'}" in result.stdout
    lock = yaml.safe_load((widget_repo / "charts/lock.yaml").read_text())["charts"]
    assert lock["widget"] == {"repo": "http://127.0.0.1:9/charts", "chart": "widget", "version": "1.2.3", "digest": sha256(archive)}
    # The real charts are not cached here: their digests stay explicitly null.
    assert lock["gpu-operator"]["digest"] is None and lock["node-feature-discovery"]["digest"] is None

    # With the digest recorded, a pull into an empty cache is verified.
    subprocess.run(["rm", "-rf", str(widget_repo / ".cache")], check=True)
    result = forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == f"widget: widget 1.2.3 from {archive} (verified)"


def test_digest_mismatch_is_refused_and_nothing_is_cached(widget_repo: Path, mirror: Path):
    archive = mirror / "widget-1.2.3.tgz"
    recorded = "sha256:" + "0" * 64
    write_lock(widget_repo, recorded)
    result = forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: widget: digest mismatch: {archive} is {sha256(archive)}, but charts/lock.yaml records {recorded}",
        "error: 1 of 1 charts not fetched",
    ]
    assert not (widget_repo / ".cache/charts/widget-1.2.3").exists()
    assert [p.name for p in (widget_repo / ".cache/charts").iterdir()] == []  # no staging left behind


def test_mirror_folder_with_another_version_is_refused(widget_repo: Path, tmp_path: Path):
    mirror = tmp_path / "unpacked"
    folder = copy_chart(mirror, version="1.2.2")
    result = forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"error: {folder}/Chart.yaml: is chart 'widget' version '1.2.2', but charts/versions.yaml pins "
        f"'widget' version '1.2.3' (key 'widget')")


def test_mirror_archive_with_another_chart_name_is_refused(widget_repo: Path, tmp_path: Path):
    mirror = tmp_path / "renamed"
    mirror.mkdir()
    built = package(copy_chart(tmp_path / "src", name="gadget"), tmp_path / "built")
    archive = mirror / "widget-1.2.3.tgz"  # right file name, wrong chart inside
    archive.write_bytes(built.read_bytes())
    result = forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"error: {archive}: Chart.yaml: is chart 'gadget' version '1.2.3', but charts/versions.yaml pins "
        f"'widget' version '1.2.3' (key 'widget')")


def test_unpacked_mirror_folder_goes_in_unverified(widget_repo: Path, tmp_path: Path):
    mirror = tmp_path / "unpacked"
    folder = copy_chart(mirror / "widget-1.2.3")  # <chart>-<version>/<chart>/, as `helm pull --untar -d` leaves it
    result = forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        f"widget: widget 1.2.3 from {folder} (UNVERIFIED: an unpacked folder has no archive to check a digest against)")
    result = forge(widget_repo, "charts", "pull", "--from", str(mirror), "--require-digest", "widget")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        "error: widget: no verified digest (an unpacked folder has no archive to check a digest against) "
        "and --require-digest was given")


def test_a_mirror_without_the_chart_says_what_it_looked_for(widget_repo: Path, tmp_path: Path):
    mirror = tmp_path / "other"
    mirror.mkdir()
    package(copy_chart(tmp_path / "old", version="1.0.0"), mirror)
    result = forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"error: {mirror}: no widget 1.2.3 (looked for widget-1.2.3.tgz at any depth, and the folders "
        f"widget-1.2.3/widget/, widget-1.2.3/, widget/ holding a Chart.yaml); it has: widget-1.0.0.tgz")


def test_stale_lock_entry_is_not_used_to_verify(widget_repo: Path, mirror: Path):
    write_lock(widget_repo, "sha256:" + "1" * 64, version="1.2.0")
    result = forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        f"widget: widget 1.2.3 from {mirror / 'widget-1.2.3.tgz'} (UNVERIFIED: charts/lock.yaml entry 'widget' is for "
        f"widget 1.2.0 from http://127.0.0.1:9/charts, but charts/versions.yaml pins widget 1.2.3 from "
        f"http://127.0.0.1:9/charts (stale))")


def test_helm_pull_from_an_http_repository_is_verified(widget_repo: Path, tmp_path: Path):
    """The network path with the real `helm pull`, against a chart repository on localhost."""
    served = tmp_path / "served"
    served.mkdir()
    archive = package(CHARTS / "widget", served)
    helm = helm_command(REPO)
    subprocess.run([*helm, "repo", "index", str(served)], check=True, capture_output=True)
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        versions = widget_repo / "charts/versions.yaml"
        versions.write_text(versions.read_text().replace("http://127.0.0.1:9/charts", url))
        chart_pins.cache_clear()  # pins are read once per process; this test edits them after `generate`
        lock = {"charts": {"widget": {"repo": url, "chart": "widget", "version": "1.2.3", "digest": sha256(archive)}}}
        (widget_repo / "charts/lock.yaml").write_text(yaml.safe_dump(lock))
        result = forge(widget_repo, "charts", "pull", "widget")
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[0] == f"widget: widget 1.2.3 from {url} (verified)"
        # Pulled again with the digest recorded: served from the cache, no download.
        server.shutdown()
        result = forge(widget_repo, "charts", "pull", "widget")
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[0] == (
            f"widget: widget 1.2.3 from the cache ({widget_repo / '.cache/charts/widget-1.2.3'}) (verified)")
    finally:
        server.shutdown()
        server.server_close()


def test_helm_pull_failure_points_at_the_mirror_option(widget_repo: Path):
    result = forge(widget_repo, "charts", "pull", "widget")  # nothing listens on 127.0.0.1:9
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert first.startswith("error: widget: `helm pull` of widget 1.2.3 from http://127.0.0.1:9/charts failed: ")
    assert first.endswith(" (without network: forge charts pull --from <mirror>)")
