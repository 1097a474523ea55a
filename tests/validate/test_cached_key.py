"""A cluster's validate key (forge.validate.cached.cluster_key) changes with every file validation
reads: the inventory, each rendered file, the values files and the examples of its overlay; not
with overlay files that reach validation only through the rendered output."""
from __future__ import annotations

from pathlib import Path

from forge.generate.cache import Digests
from forge.validate.cached import cluster_key

FILES = {
    "clusters/x/inventory.yaml": "cluster: {name: x}\n",
    "build/rendered/x/loki.yaml": "kind: ConfigMap\n",
    "overlays/x/loki/values.yaml": "a: 1\n",
    "overlays/x/gpu/values-extra.yaml": "b: 1\n",
    "overlays/x/flyte/examples/job.yaml": "kind: Job\n",
    "overlays/x/loki/kustomization.yaml": "resources: []\n",
}


def _key(root: Path, shared: str = "shared") -> str:
    return cluster_key(root, root / "build/rendered", root / "clusters/x/inventory.yaml", shared, Digests())


def test_key_follows_the_files_validation_reads(tmp_path: Path):
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    keys = {_key(tmp_path)}
    for rel in list(FILES)[:5]:
        (tmp_path / rel).write_text(FILES[rel] + "# changed\n")
        keys.add(_key(tmp_path))
    assert len(keys) == 6  # each of the five changes gave a new key
    (tmp_path / "overlays/x/loki/kustomization.yaml").write_text("resources: [a.yaml]\n")
    assert _key(tmp_path) in keys  # seen through build/rendered only
    assert _key(tmp_path, "other") not in keys
