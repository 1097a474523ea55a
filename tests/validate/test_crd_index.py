"""The upstream CRD folder: lazily parsed, and the installing chart's copy wins over stale copies."""
from __future__ import annotations

from pathlib import Path

from forge.validate.crd_index import LazyCrdFolder


def crd(spec_field: str) -> str:
    # A hand-written test CRD (not an upstream one): one version, one spec field.
    return f"""apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    plural: widgets
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                {spec_field}: {{type: string}}
"""


def folders(tmp_path: Path) -> list[Path]:
    out = []
    for chart, field in (("new-chart-1.0", "portNumber"), ("old-chart-1.0", "targetPort")):
        folder = tmp_path / chart / "crds"
        folder.mkdir(parents=True)
        (folder / "widgets.example.com.yaml").write_text(crd(field))
        out.append(folder)
    return out


def widget(field: str) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {field: "x"}}


def test_the_owning_charts_copy_wins(tmp_path: Path):
    index = LazyCrdFolder(folders(tmp_path), owners={"example.com": tmp_path / "new-chart-1.0"})
    assert index.validate(widget("portNumber")) == []
    assert index.validate(widget("targetPort")) == [("spec.targetPort", "unknown field")]


def test_without_an_owner_the_last_folder_wins(tmp_path: Path):
    index = LazyCrdFolder(folders(tmp_path))
    assert index.validate(widget("targetPort")) == []
    assert index.validate({"apiVersion": "other.io/v1", "kind": "Gadget"}) is None
