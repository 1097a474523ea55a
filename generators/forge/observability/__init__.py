"""Observability content shared by the prometheus, loki, alloy and gpu-operator components:
metric names, the DCGM exporter's field list, sizing formulas, alert rules, dashboards and the
log shipper's configuration. Pure functions of the ClusterModel; components only wrap them.
"""
from __future__ import annotations

import json
from typing import Any


def plain(obj: Any) -> Any:
    """A copy sharing no sub-objects, so the YAML emitter writes no anchors/aliases (readable diffs)."""
    return json.loads(json.dumps(obj))
