"""`forge charts bump` and the chart reader on hostile charts (issue 36). The charts are fixtures
written here (a minimal kuberay-operator 1.7.1: Chart.yaml, values.yaml, one CRD), each with one
hostile part, as a folder or packed with Python's tarfile (which, unlike `helm package`, can
write the `..` names, links and sizes a hostile archive holds). Each is one `error:` line, exit
2, nothing written, never a traceback."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
import yaml

from forge.upstream.bump import bump_versions_text
from forge.upstream.chart import load_chart
MAX_MEMBER_BYTES = 8 * 1024 * 1024  # forge.upstream.members.MAX_MEMBER_BYTES (a literal: this test also runs on main)
from tests.helpers import REPO, copy_repo_inputs, forge

CHART = "apiVersion: v2\nname: kuberay-operator\nversion: 1.7.1\n"
PWN = "../../../p/.github/workflows/pwn"


def crd(name: str) -> str:
    return yaml.safe_dump({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                           "metadata": {"name": name}, "spec": {"group": "ray.io", "versions": [{"name": "v1"}]}})


def folder(tmp: Path, files: dict[str, str | bytes]) -> Path:
    chart = tmp / "src/kuberay-operator"
    for rel, body in {"Chart.yaml": CHART, "values.yaml": "image: {tag: v1.7.1}\n", **files}.items():
        (chart / rel).parent.mkdir(parents=True, exist_ok=True)
        (chart / rel).write_bytes(body.encode() if isinstance(body, str) else body)
    return chart


def archive(tmp: Path, members: list[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    path = tmp / "kuberay-operator-1.7.1.tgz"
    with tarfile.open(path, "w:gz") as tar:
        for member in [("kuberay-operator/Chart.yaml", CHART.encode()), *members]:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
            else:
                info = tarfile.TarInfo(member[0])
                info.size = len(member[1])
                tar.addfile(info, io.BytesIO(member[1]))
    return path


def link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh"))

CASES = {
    "crd-name-escapes": (lambda t: folder(t, {"crds/pwn.yaml": crd(PWN)}), "is not a Kubernetes object name"),
    "crd-name-not-text": (lambda t: folder(t, {"crds/x.yaml": "kind: CustomResourceDefinition\nmetadata: null\n"}),
                          "is not a Kubernetes object name"),
    "values-symlink": (lambda t: _linked_values(t), "is a symbolic link"),
    "member-dotdot": (lambda t: archive(t, [("kuberay-operator/../../../p/x.yaml", b"a: 1\n")]), "not a plain relative path"),
    "member-absolute": (lambda t: archive(t, [("/etc/x.yaml", b"a: 1\n")]), "not a plain relative path"),
    "member-symlink": (lambda t: archive(t, [link("kuberay-operator/values.yaml", "/root/.kube/config")]),
                       "a link or a special file"),
    "member-hardlink": (lambda t: archive(t, [link("kuberay-operator/values.yaml", "/etc/passwd", tarfile.LNKTYPE)]),
                        "a link or a special file"),
    "member-huge": (lambda t: archive(t, [("kuberay-operator/values.yaml", b"#" * (MAX_MEMBER_BYTES + 1))]),
                    "no chart file is that large"),
    "values-alias-bomb": (lambda t: folder(t, {"values.yaml": BOMB}), "aliases expand to too much"),
    "values-binary": (lambda t: folder(t, {"values.yaml": b"\x7fELF\x00\xff"}), "not UTF-8"),
    "chart-yaml-a-list": (lambda t: folder(t, {"Chart.yaml": "- a\n- b\n"}), "Chart.yaml: not a mapping"),
    "not-an-archive": (lambda t: (t / "x.tgz").write_bytes(b"\x1f\x8b garbage") and t / "x.tgz", "not a chart archive"),
}


def _linked_values(tmp: Path) -> Path:
    secret = tmp / "kubeconfig"
    secret.write_text("token: s3cr3t-t0ken\n")
    chart = folder(tmp, {})
    (chart / "values.yaml").unlink()
    (chart / "values.yaml").symlink_to(secret)
    return chart


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_chart_is_one_error_line_and_nothing_is_written(case, tmp_path):
    make, words = CASES[case]
    root = copy_repo_inputs(tmp_path / "repo")
    data = tmp_path / "upstream"
    data.mkdir()
    before = (root / "charts/versions.yaml").read_text()
    chart = make(tmp_path)
    result = forge(root, "charts", "bump", "kuberay-operator", "1.7.1", "--chart", str(chart), "--upstream", str(data))
    assert result.exit_code == 2, result.output
    assert words in result.output, result.output
    assert "Traceback" not in result.output and "s3cr3t" not in result.output
    assert result.output.startswith("error: ")
    assert (root / "charts/versions.yaml").read_text() == before
    assert list(data.iterdir()) == []
    assert not (tmp_path / "p").exists() and not (root / ".github").exists()


def test_the_chart_reader_refuses_the_same_charts(tmp_path):
    from forge.errors import ForgeError

    for case in ("member-dotdot", "member-symlink", "values-symlink", "values-alias-bomb"):
        (tmp_path / case).mkdir()
        with pytest.raises(ForgeError):
            load_chart(CASES[case][0](tmp_path / case))


def test_a_bump_to_a_release_candidate_writes_that_version():
    text = (REPO / "charts/versions.yaml").read_text()
    bumped = yaml.safe_load(bump_versions_text(text, "kuberay-operator", "1.7.0", "1.7.0-rc.1"))
    assert bumped["charts"]["kuberay-operator"]["version"] == "1.7.0-rc.1"
    assert bumped["images"]["kuberay-operator"]["tag"] == "v1.7.0-rc.1"
    again = yaml.safe_load(bump_versions_text(bump_versions_text(text, "kuberay-operator", "1.7.0", "1.7.0-rc.1"),
                                              "kuberay-operator", "1.7.0-rc.1", "1.7.0"))
    assert again["charts"]["kuberay-operator"]["version"] == "1.7.0"
    assert again["images"]["kuberay-operator"]["tag"] == "v1.7.0"
