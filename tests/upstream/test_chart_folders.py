"""`forge charts bump --chart DIR` (and the chart reader hydrate uses) on a chart FOLDER holds it to
the rule of chart archives (issue 36): each file is a regular file inside the folder, so a link
(symbolic, to a file or a folder, outside or inside; or hard), a FIFO or a device is refused with
one `error:` line naming the folder's file and what is allowed, exit 2, nothing written, the pin
not moved, and a FIFO never blocks. The charts are tests.upstream.test_hostile_charts' fixture (a
minimal kuberay-operator 1.7.1) with one hostile part."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge.upstream.chart import load_chart
from tests.helpers import REPO, copy_repo_inputs, forge
from tests.upstream.test_hostile_charts import crd, folder

SECRET = "token: s3cr3t-t0ken\n"
ALLOWED = "must be a regular file inside the chart folder"
MIB = 2**20


def _kubeconfig(tmp: Path) -> Path:
    secret = tmp / "kubeconfig"
    secret.write_text(SECRET)
    return secret


def _replace(chart: Path, rel: str, make) -> Path:
    path = chart / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    make(path)
    return chart


def _outside_folder(tmp: Path) -> Path:
    out = tmp / "elsewhere"
    out.mkdir()
    (out / "stolen.yaml").write_text(SECRET)
    return out


CASES = {
    # case: (make the chart folder, the folder's file the message names, what the message says it is)
    "values-link-out": (lambda t: _replace(folder(t, {}), "values.yaml", lambda p: p.symlink_to(_kubeconfig(t))),
                        "values.yaml", "is a symbolic link to {tmp}/kubeconfig, outside the chart folder"),
    "chart-yaml-link-out": (lambda t: _replace(folder(t, {}), "Chart.yaml", lambda p: p.symlink_to(_kubeconfig(t))),
                            "Chart.yaml", "is a symbolic link to {tmp}/kubeconfig, outside the chart folder"),
    "schema-link-out": (lambda t: _replace(folder(t, {}), "values.schema.json", lambda p: p.symlink_to(_kubeconfig(t))),
                        "values.schema.json", "is a symbolic link to {tmp}/kubeconfig, outside the chart folder"),
    "crd-link-out": (lambda t: _replace(folder(t, {"crds/a.yaml": crd("a.ray.io")}), "crds/b.yaml",
                                        lambda p: p.symlink_to(_kubeconfig(t))),
                     "crds/b.yaml", "is a symbolic link to {tmp}/kubeconfig, outside the chart folder"),
    "crds-folder-link-out": (lambda t: _replace(folder(t, {}), "crds", lambda p: p.symlink_to(_outside_folder(t))),
                             "crds", "is a symbolic link to {tmp}/elsewhere, outside the chart folder"),
    "subfolder-link-out": (lambda t: _replace(folder(t, {}), "crds/more", lambda p: p.symlink_to(_outside_folder(t))),
                           "crds/more", "is a symbolic link to {tmp}/elsewhere, outside the chart folder"),
    "link-dangling": (lambda t: _replace(folder(t, {}), "values.yaml", lambda p: p.symlink_to(t / "nothing")),
                      "values.yaml", "is a symbolic link to {tmp}/nothing, outside the chart folder"),
    # Archive members may not be links at all, so neither may a folder's files, even to its own.
    "link-inside": (lambda t: _replace(folder(t, {"defaults.yaml": "image: {tag: v1.7.1}\n"}), "values.yaml",
                                       lambda p: p.symlink_to("defaults.yaml")),
                    "values.yaml", "is a symbolic link to defaults.yaml, inside the chart folder"),
    "hard-link-out": (lambda t: _replace(folder(t, {}), "values.yaml", lambda p: os.link(_kubeconfig(t), p)),
                      "values.yaml", "is a hard link (one of 2 names of one file, the others maybe outside the chart folder)"),
    "subchart-hard-link-out": (lambda t: _replace(folder(t, {"charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 1.0.0\n"}),
                                                  "charts/sub/values.yaml", lambda p: os.link(_kubeconfig(t), p)),
                               "charts/sub/values.yaml", "is a hard link"),
    "fifo-values": (lambda t: _replace(folder(t, {}), "values.yaml", os.mkfifo), "values.yaml", "is a FIFO"),
    "fifo-crd": (lambda t: _replace(folder(t, {}), "crds/x.yaml", os.mkfifo), "crds/x.yaml", "is a FIFO"),
    "device-link": (lambda t: _replace(folder(t, {}), "values.yaml", lambda p: p.symlink_to("/dev/zero")),
                    "values.yaml", "is a symbolic link to /dev/zero, outside the chart folder"),
}


def bump(tmp: Path, chart: Path, root: Path, data: Path) -> subprocess.CompletedProcess:
    """The real command in a child process with a deadline: a FIFO opened for reading blocks forever."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "generators"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "forge.commands.main", "charts", "bump", "kuberay-operator", "1.7.1",
                           "--chart", str(chart), "--upstream", str(data), "--no-generate", "--root", str(root)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp)


@pytest.mark.parametrize("case", list(CASES))
def test_a_chart_folder_file_that_is_not_a_regular_file_inside_it_is_refused(case, tmp_path):
    make, rel, words = CASES[case]
    root = copy_repo_inputs(tmp_path / "repo")
    data = tmp_path / "upstream"
    data.mkdir()
    before = (root / "charts/versions.yaml").read_text()
    chart = make(tmp_path)
    result = bump(tmp_path, chart, root, data)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    lines = out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {chart}/{rel}: "), out
    assert words.format(tmp=tmp_path) in out, out
    assert ALLOWED in out, out
    assert "Traceback" not in out and "s3cr3t" not in out
    assert (root / "charts/versions.yaml").read_text() == before  # the pin did not move
    assert list(data.iterdir()) == []  # no upstream data, not even half of it


@pytest.mark.parametrize("case", ["values-link-out", "link-inside", "hard-link-out", "fifo-values", "crds-folder-link-out"])
def test_the_chart_reader_refuses_the_same_folders(case, tmp_path):
    from forge.upstream.members import ChartRefused

    with pytest.raises(ChartRefused, match=ALLOWED):
        load_chart(CASES[case][0](tmp_path))


def test_a_chart_folder_named_through_a_link_is_read_as_the_folder(tmp_path):
    """The folder named on the command line may be reached through a link (as an archive may): the
    rule is about the files inside it. It was refused as 'cannot read the chart archive'."""
    root = copy_repo_inputs(tmp_path / "repo")
    data = tmp_path / "upstream"
    data.mkdir()
    chart = folder(tmp_path, {"crds/a.yaml": crd("a.ray.io")})
    named = tmp_path / "named"
    named.symlink_to(chart)
    result = forge(root, "charts", "bump", "kuberay-operator", "1.7.1", "--chart", str(named), "--upstream", str(data),
                   "--no-generate")
    assert result.exit_code == 0, result.output
    assert sorted(p.relative_to(data).as_posix() for p in data.rglob("*") if p.is_file()) == [
        "kuberay-operator-1.7.1/crds/a.ray.io.yaml", "kuberay-operator-1.7.1/values.yaml"]


def test_an_unreadable_subfolder_is_refused_not_skipped(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads any folder")
    root = copy_repo_inputs(tmp_path / "repo")
    data = tmp_path / "upstream"
    data.mkdir()
    chart = folder(tmp_path, {"crds/a.yaml": crd("a.ray.io")})
    (chart / "crds").chmod(0)
    try:
        result = forge(root, "charts", "bump", "kuberay-operator", "1.7.1", "--chart", str(chart), "--upstream", str(data),
                       "--no-generate")
    finally:
        (chart / "crds").chmod(0o755)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {chart}/crds: cannot read"), result.output
    assert list(data.iterdir()) == []


@pytest.mark.parametrize("case", ["values-link-out", "hard-link-out", "fifo-values"])
def test_charts_pull_from_a_mirror_folder_holds_it_to_the_same_rule(case, widget_repo: Path, tmp_path: Path):
    """An unpacked chart in a mirror went into the cache by a copy that followed links: a values.yaml
    linked to a kubeconfig was cached, then rendered by helm. It is read as bump reads a folder."""
    from tests.upstream.conftest import copy_chart

    chart = copy_chart(tmp_path / "mirror/widget-1.2.3")
    {"values-link-out": lambda p: p.symlink_to(_kubeconfig(tmp_path)),
     "hard-link-out": lambda p: os.link(_kubeconfig(tmp_path), p), "fifo-values": os.mkfifo}[case](_gone(chart / "values.yaml"))
    result = forge(widget_repo, "charts", "pull", "--from", str(tmp_path / "mirror"), "widget")
    assert result.exit_code == 2, result.output
    assert f"error: {chart}/values.yaml: is " in result.output and ALLOWED in result.output, result.output
    assert "s3cr3t" not in result.output and "Traceback" not in result.output
    cache = widget_repo / ".cache/charts"
    assert not any(p.is_file() and "s3cr3t" in p.read_text(errors="replace") for p in cache.rglob("*")), list(cache.rglob("*"))
    assert not (cache / "widget-1.2.3").exists()


def _gone(path: Path) -> Path:
    path.unlink()
    return path


BIG = 4 * MIB + 1  # one byte over forge.upstream.members.MAX_YAML_BYTES (a literal: this test also runs on main)


@pytest.mark.parametrize("rel", ["values.yaml", "crds/big.yaml", "Chart.yaml"])
def test_a_chart_yaml_file_larger_than_an_inventory_may_be_is_refused_before_it_is_parsed(rel, tmp_path):
    """A 8 MiB values.yaml took 22 s and 1.1 GB to parse (and was accepted); forge parses no chart
    YAML file larger than an inventory may be (4 MiB; the largest pinned, a CRD, is 1.4 MiB)."""
    root = copy_repo_inputs(tmp_path / "repo")
    data = tmp_path / "upstream"
    data.mkdir()
    head = {"values.yaml": "image: {tag: v1.7.1}\n", "crds/big.yaml": crd("big.ray.io"),
            "Chart.yaml": "apiVersion: v2\nname: kuberay-operator\nversion: 1.7.1\n"}[rel]
    chart = folder(tmp_path, {rel: head + "#" * (BIG - len(head) - 1) + "\n"})
    before = (root / "charts/versions.yaml").read_text()
    result = forge(root, "charts", "bump", "kuberay-operator", "1.7.1", "--chart", str(chart), "--upstream", str(data),
                   "--no-generate")
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {chart}/{rel}: is more than 4 MiB ({BIG:,} bytes): "), result.output
    assert "may be at most 4 MiB" in result.output and len(result.output.splitlines()) == 1
    assert (root / "charts/versions.yaml").read_text() == before and list(data.iterdir()) == []


def test_the_chart_reader_refuses_a_huge_values_file_too(tmp_path):
    from forge.upstream.members import ChartRefused

    chart = folder(tmp_path, {"values.yaml": "a: 1\n" + "#" * BIG + "\n"})
    with pytest.raises(ChartRefused, match="is more than 4 MiB"):
        load_chart(chart)


def test_empty_subfolders_count_against_the_member_limit(tmp_path):
    """Folders were not counted: a chart folder of a million empty folders was walked to the end
    (10,001 here: one over forge.upstream.members.MAX_MEMBERS)."""
    from forge.upstream.members import ChartRefused

    chart = folder(tmp_path, {})
    for i in range(10_001):
        (chart / "templates" / f"d{i}").mkdir(parents=True)
    with pytest.raises(ChartRefused, match="more than 10,000 files and folders"):
        load_chart(chart)


def test_a_subfolder_swapped_for_a_link_during_the_walk_is_never_followed(tmp_path, monkeypatch):
    """The walk listed `crds` as a folder, then descended by its path: a link swapped in between was
    followed and a file outside the chart read. Swapped right after the top folder is listed."""
    from forge.upstream.members import ChartRefused, from_folder

    chart = folder(tmp_path, {"crds/a.yaml": crd("a.ray.io")})
    outside = _outside_folder(tmp_path)
    real_scandir, swapped = os.scandir, []

    def scandir(target):
        entries = list(real_scandir(target))
        if not swapped:  # the first listing is the chart folder's own
            swapped.append(True)
            os.rename(chart / "crds", tmp_path / "crds-moved")
            (chart / "crds").symlink_to(outside)
        return iter(entries)

    monkeypatch.setattr(os, "scandir", scandir)
    try:
        files = from_folder(chart)
    except ChartRefused as refused:
        assert f"{chart}/crds: " in str(refused) and "outside the chart folder" in str(refused), refused
    else:
        pytest.fail(f"read through the swapped link: {sorted(files)}")
    assert swapped


@pytest.mark.parametrize("schema, words", [
    (b"{not json", "not JSON"),
    (b"[" * 200_000 + b"]" * 200_000, "nests deeper than JSON can be read"),
    (b"[1, 2]", "is a JSON list, not an object"),
    (b"\xff\xfe{}", "UTF-8"),
])
def test_a_values_schema_that_is_not_a_json_object_is_refused(schema, words, tmp_path):
    """values.schema.json was copied into the upstream data unparsed; helm and validate then failed
    on it later, away from the chart (a 200,000-deep one: a RecursionError traceback)."""
    root = copy_repo_inputs(tmp_path / "repo")
    data = tmp_path / "upstream"
    data.mkdir()
    chart = folder(tmp_path, {"values.schema.json": schema})
    result = bump(tmp_path, chart, root, data)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out
    assert out.startswith(f"error: {chart}/values.schema.json") and words in out, out
    assert "Traceback" not in out and list(data.iterdir()) == []
