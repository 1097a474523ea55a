"""Chart pins: the `charts` section of the one versions file. The loader is `forge.versions`;
this module keeps the names the chart code (upstream/, argocd, validate) has always imported."""
from __future__ import annotations

from forge.versions import VERSIONS_FILE, ChartPin, chart_pin, chart_pins

__all__ = ["VERSIONS_FILE", "ChartPin", "chart_pin", "chart_pins"]
