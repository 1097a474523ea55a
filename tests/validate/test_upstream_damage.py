"""A damaged upstream data folder (issue 26, "a corrupt CRD or values file in the upstream data"):
one `error:` line naming the file, line where there is one, and field; exit 2; never a traceback,
and never a CRD cut short that quietly validates against what is left of its schema.

The damages are made to a copy of the real upstream data (FORGE_UPSTREAM, read-only) the way they
happen: a copy cut short, a binary blob, an edit that breaks the YAML, a file that is not a CRD.
"""
from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from forge.validate.crd import CrdSchemas
from forge.validate.upstream_data import UpstreamDataError, crd_documents, crd_problem, yaml_documents
from tests.helpers import forge

QUEUES = "kueue-0.19.2/crds/clusterqueues.kueue.x-k8s.io.yaml"


def _cut(text: str, marker: str) -> str:
    """`text` cut at the start of the line holding the last `marker` (a copy that stopped there)."""
    at = text.rindex(marker)
    return text[:text.rindex("\n", 0, at) + 1]


@pytest.fixture
def damaged(tmp_path: Path, upstream: Path) -> Path:
    copy = tmp_path / "upstream"
    shutil.copytree(upstream, copy)
    return copy


def damage(path: Path, how: str) -> None:
    text = path.read_text(encoding="utf-8")
    if how == "cut in the last version":
        path.write_text(_cut(text, "served:"), encoding="utf-8")
    elif how == "cut in the first version":
        path.write_text(text[:3000].rsplit("\n", 1)[0] + "\n", encoding="utf-8")
    elif how == "broken YAML":
        path.write_text(text + "oops: [unclosed\n", encoding="utf-8")
    elif how == "binary":
        path.write_bytes(b"\xff\xfe\x00\x01garbage")
    elif how == "renamed":
        path.write_text(text.replace("name: clusterqueues.kueue.x-k8s.io", "name: queues.kueue.x-k8s.io", 1), encoding="utf-8")
    elif how == "two storage versions":
        path.write_text(text.replace("storage: false", "storage: true"), encoding="utf-8")
    else:
        raise AssertionError(how)


EXPECTED = {
    "cut in the last version": ": spec.versions[1].served: missing (version v1beta2): the file is cut short",
    "cut in the first version": ": spec.versions[0].served: missing (version v1beta1): the file is cut short",
    "broken YAML": ": <top>: not valid YAML: ",
    "binary": ": <top>: not UTF-8 text (byte 0)",
    "renamed": ": metadata.name: is 'queues.kueue.x-k8s.io', the API server requires 'clusterqueues.kueue.x-k8s.io'",
    "two storage versions": ": spec.versions: 2 storage versions (v1beta1, v1beta2); a CRD has exactly one",
}


@pytest.mark.parametrize("how", sorted(EXPECTED))
def test_a_damaged_crd_is_named_with_what_is_wrong(damaged: Path, how: str):
    path = damaged / QUEUES
    damage(path, how)
    with pytest.raises(UpstreamDataError) as caught:
        crd_documents(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and EXPECTED[how] in message, message
    assert "(upstream data); restore the folder from the chart's release" in message
    assert pickle.loads(pickle.dumps(caught.value)).lines() == caught.value.lines()  # crosses forge's workers


def test_broken_yaml_names_its_line(damaged: Path):
    path = damaged / QUEUES
    lines = path.read_text(encoding="utf-8").count("\n")
    damage(path, "broken YAML")
    # The unclosed list starts on the added line; the parser gives up at the end, one line on.
    with pytest.raises(UpstreamDataError, match=rf"^{path}:({lines + 1}|{lines + 2}): <top>: not valid YAML"):
        crd_documents(path)


def test_every_real_upstream_crd_has_the_shape_validation_relies_on(upstream: Path):
    # The check must not refuse good data: every CRD of every chart folder passes it.
    crds = [doc for path in sorted(upstream.glob("*/crds/*.y*ml")) for doc in yaml_documents(path)
            if doc.get("kind") == "CustomResourceDefinition"]
    assert len(crds) > 50
    assert [(c["metadata"]["name"], crd_problem(c)) for c in crds if crd_problem(c)] == []
    assert CrdSchemas().add_dir(upstream) == len(crds)


def test_a_damaged_values_file_is_named(damaged: Path):
    from forge.validate.values import _defaults

    path = damaged / "loki-7.3.0/values.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "a: [\n", encoding="utf-8")
    with pytest.raises(UpstreamDataError, match=rf"^{path}:\d+: <top>: not valid YAML"):
        _defaults(path)


def one_error(result) -> str:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def test_validate_stops_with_one_line_on_damaged_upstream_data(repo_inputs: Path, damaged: Path, kustomize, monkeypatch):
    monkeypatch.setenv("FORGE_UPSTREAM", "")
    assert forge(repo_inputs, "generate").exit_code == 0
    assert forge(repo_inputs, "render").exit_code == 0
    damage(damaged / QUEUES, "cut in the last version")
    line = one_error(forge(repo_inputs, "validate", "--upstream", str(damaged)))
    assert line.startswith(f"error: {damaged / QUEUES}: spec.versions[1].served: missing"), line

    (damaged / QUEUES).write_bytes(b"\xff")  # the same file as a binary blob: still one line
    assert "not UTF-8 text" in one_error(forge(repo_inputs, "validate", "--upstream", str(damaged)))
