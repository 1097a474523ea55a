"""Throughput check, run by hand (not a test): PYTHONPATH=generators python -m forge.validate._speed

Renders 20k small objects (ConfigMaps and Deployments) as one YAML stream, then times parsing,
schema validation and house-rule checks separately, and prints objects per second for each.
"""
from __future__ import annotations

import sys
import time

import yaml

from forge.validate.kube import KubeSchemas
from forge.validate.objects import load_yaml_stream
from forge.validate.policies import check_policies

LABELS = {"app.kubernetes.io/managed-by": "forge"}


def _objects(n: int) -> list[dict]:
    out = []
    for i in range(n // 2):
        meta = {"name": f"obj-{i}", "namespace": f"ns-{i % 50}", "labels": dict(LABELS, app=f"a{i}")}
        out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": f"v{i}", "x": "y" * 40}})
        out.append({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": f"a{i}"}},
                "template": {
                    "metadata": {"labels": {"app": f"a{i}"}},
                    "spec": {
                        "nodeSelector": {"nvidia.com/gpu.present": "true"},
                        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                        "containers": [{
                            "name": "main",
                            "image": f"registry.example.com/team/app:1.{i % 9}.0",
                            "args": ["--port=8080", "--verbose"],
                            "ports": [{"containerPort": 8080, "name": "http"}],
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                            "resources": {"limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}},
                            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10},
                        }],
                    },
                },
            },
        })
    return out


def main(n: int = 20_000) -> None:
    text = yaml.dump_all(_objects(n), Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))

    t0 = time.perf_counter()
    kube = KubeSchemas("1.34")
    t_init = time.perf_counter() - t0

    t0 = time.perf_counter()
    objs = load_yaml_stream(text)
    t_parse = time.perf_counter() - t0

    kube.validate(objs[0]), kube.validate(objs[1])  # compile both schemas outside the timed loop
    t0 = time.perf_counter()
    bad = sum(1 for o in objs if kube.validate(o))
    t_schema = time.perf_counter() - t0

    t0 = time.perf_counter()
    bad_policy = sum(1 for o in objs if check_policies(o, required_labels=LABELS))
    t_policy = time.perf_counter() - t0

    total = t_parse + t_schema + t_policy
    print(f"{len(objs)} objects, {len(text) / 1e6:.1f} MB YAML; KubeSchemas init {t_init * 1000:.0f} ms")
    print(f"parse   (CSafeLoader={hasattr(yaml, 'CSafeLoader')}): {t_parse:6.2f} s  {len(objs) / t_parse:9.0f} obj/s")
    print(f"schema  (jsonschema_rs): {t_schema:6.2f} s  {len(objs) / t_schema:9.0f} obj/s  ({bad} invalid)")
    print(f"policy  (pure Python):   {t_policy:6.2f} s  {len(objs) / t_policy:9.0f} obj/s  ({bad_policy} flagged)")
    print(f"all three, one core:     {total:6.2f} s  {len(objs) / total:9.0f} obj/s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
