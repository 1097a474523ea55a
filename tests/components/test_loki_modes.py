"""Every deployment mode forge can pick for Loki (forge.observability.sizing: SingleBinary,
SimpleScalable, Distributed) gets the same wiring: the S3 credentials and -config.expand-env on
every target, each stateful target's volume in the chosen class, and the priority class, checked
per mode against loki 7.3.0's own values.yaml and values.schema.json (the upstream data,
FORGE_UPSTREAM) rather than against forge's own idea of the chart (issue 34)."""
from __future__ import annotations

import dataclasses
import re

import pytest
import yaml

from forge.components.local_storage import chosen_class
from forge.components.loki import EXPAND_ENV, GLOBAL_SCOPE, Loki
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL
from forge.observability.sizing import LOKI_TARGETS
from forge.validate.values import check_values

CHART = "loki-7.3.0"
DAILY_GB = {"SingleBinary": 5.0, "SimpleScalable": 100.0, "Distributed": 2500.0}


def chart_scope(values_text: str) -> set[str]:
    """The targets global.extraEnvFrom reaches, from the `scope:` comment above it, as values keys."""
    comment = re.search(r"# scope: ([^\n]+)\n(?:  #[^\n]*\n)*  extraEnvFrom:", values_text)
    assert comment, "loki's values.yaml no longer says which targets global.extraEnvFrom reaches"
    return {re.sub(r"-(\w)", lambda m: m.group(1).upper(), name.strip().rstrip(".")) for name in comment.group(1).split(",")}


def with_daily(cluster, daily: float):
    loki = cluster.component_settings["loki"]
    settings = loki.model_validate({**loki.model_dump(exclude_unset=True), "daily_log_gb": daily})
    return dataclasses.replace(cluster, component_settings={**cluster.component_settings, "loki": settings})


@pytest.fixture(scope="module")
def chart(upstream):
    text = (upstream / CHART / "values.yaml").read_text()
    return text, yaml.safe_load(text)


def test_forge_knows_the_chart_s_global_scope(chart):
    assert GLOBAL_SCOPE == chart_scope(chart[0]) & {t for targets in LOKI_TARGETS.values() for t in targets}


@pytest.mark.parametrize("mode", list(LOKI_TARGETS))
def test_every_target_of_every_mode_gets_credentials_storage_and_priority(mode, chart, clusters):
    text, defaults = chart
    cluster = with_daily(clusters["a100"], DAILY_GB[mode])
    values = Loki().values(cluster)
    assert values["deploymentMode"] == mode
    scope, secret = chart_scope(text), [{"secretRef": {"name": cluster.settings.s3.credentials_secret}}]
    settings = cluster.component_settings["loki"]
    storage_class = chosen_class(cluster, settings.storage_class, settings.data_path, "loki")
    for target in LOKI_TARGETS[mode]:
        mine = values[target]
        assert mine["replicas"] > 0
        # Credentials and the env expansion: through the globals where the chart applies them, else its own.
        env_from = [*(values["global"]["extraEnvFrom"] if target in scope else []), *mine.get("extraEnvFrom", [])]
        args = [*(values["global"]["extraArgs"] if target in scope else []), *mine.get("extraArgs", [])]
        assert secret[0] in env_from and EXPAND_ENV in args, f"{mode}: {target} starts without its S3 credentials"
        # Storage: every target for which the chart has a volume claims it, in the chosen class.
        persistence = defaults[target].get("persistence")
        if persistence is not None and target not in ("read",):  # read's persistence is its unused cache dir
            merged = {**persistence, **mine.get("persistence", {})}
            on = merged.get("enabled", merged.get("volumeClaimsEnabled", False))
            classes = [c.get("storageClass") for c in merged["claims"]] if "claims" in merged else [merged.get("storageClass")]
            assert on and classes == [storage_class] * len(classes), f"{mode}: {target} volume {merged}"
    # The priority: global.priorityClassName, which every Loki target's template coalesces with its own.
    assert values["global"]["priorityClassName"] == SYSTEM_CLUSTER_CRITICAL
    assert all(values[c]["priorityClassName"] == SYSTEM_CLUSTER_CRITICAL for c in ("chunksCache", "resultsCache"))


@pytest.mark.parametrize("mode", list(LOKI_TARGETS))
def test_every_mode_s_values_are_the_chart_s_keys(mode, upstream, clusters):
    values = Loki().values(with_daily(clusters["a100"], DAILY_GB[mode]))
    assert check_values(values, upstream / CHART, Loki.declared_values) == []
