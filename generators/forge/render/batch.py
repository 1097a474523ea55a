"""Many overlays of one cluster in ONE `kustomize build`, split back into each overlay's output.

Starting kustomize costs more than building a small overlay, so a cluster's overlays (and its
bootstrap) are built together: a throw-away kustomization lists one wrapper per overlay, and each
wrapper adds a marker annotation (`MARKER: <component>`, on metadata only) to its overlay's
objects. The combined output is split on the markers and the marker lines removed; what is left
is byte for byte what `kustomize build <overlay>` prints (kustomize orders objects by a total
order of kind and id, so each overlay's objects keep their own order; tests/render checks the
equality on the shipped fleets). When the combined build fails (two overlays emitting one object,
a broken overlay) or an overlay comes back empty, the caller builds those overlays one by one,
which also gives kustomize's own error for the broken one.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from forge.generate.cache import CACHE_DIR

MARKER = "forge.exa.ai/render-overlay"
_WRAPPER = """resources:
- {source}
transformers:
- |-
  apiVersion: builtin
  kind: AnnotationsTransformer
  metadata:
    name: forge-render-overlay
  annotations:
    {marker}: {name}
  fieldSpecs:
  - path: metadata/annotations
    create: true
"""


def _strip(doc: str) -> tuple[str | None, str]:
    """(the overlay named by the marker, the document without it)."""
    lines = doc.split("\n")
    prefix = f"    {MARKER}: "
    for i, line in enumerate(lines):
        if line.startswith(prefix):
            name = line[len(prefix):]
            del lines[i]
            # The marker was the only annotation: drop the map kustomize created for it.
            if lines[i - 1] == "  annotations:" and not (i < len(lines) and lines[i].startswith("    ")):
                del lines[i - 1]
            return name, "\n".join(lines)
    return None, doc


def split(text: str, names: list[str]) -> dict[str, str] | None:
    """Combined output -> each overlay's output; None when a document carries no known marker."""
    docs: dict[str, list[str]] = {name: [] for name in names}
    for doc in text.split("\n---\n") if text.strip() else []:
        name, stripped = _strip(doc if doc.endswith("\n") else doc + "\n")
        if name not in docs:
            return None
        docs[name].append(stripped)
    return {name: "---\n".join(parts) for name, parts in docs.items()}


def build_together(root: Path, sources: dict[str, Path], command: list[str]) -> dict[str, str] | None:
    """Every overlay (name -> folder relative to root) in one kustomize run; None if it failed or
    a document carries no known marker (the caller then builds the overlays alone). An overlay
    with no objects (prometheus-crds: the chart brings them) is empty, as kustomize prints it."""
    scratch = root / CACHE_DIR
    scratch.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="batch-", dir=scratch))
    try:
        for name, source in sources.items():
            (work / name).mkdir()
            up = "../" * len((work / name).relative_to(root).parts)
            (work / name / "kustomization.yaml").write_text(
                _WRAPPER.format(source=up + source.as_posix(), marker=MARKER, name=name), encoding="utf-8")
        (work / "kustomization.yaml").write_text("resources:\n" + "".join(f"- {n}\n" for n in sources), encoding="utf-8")
        proc = subprocess.run([*command, str(work)], capture_output=True, text=True, encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if proc.returncode != 0:
        return None
    return split(proc.stdout, list(sources))
