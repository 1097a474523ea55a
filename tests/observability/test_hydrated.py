"""What the observability components ask of the real charts' output (`forge validate --hydrated`),
and the fixes found by hydrating kube-prometheus-stack 88.5.3 and loki 7.3.0 for real.

CI has no charts, so the checks run here on objects shaped like what those charts rendered from
our values (recorded from a real `forge hydrate`; each stand-in says so). The real run is
`forge charts pull --from <mirror> && forge hydrate && forge validate --hydrated`.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
import yaml

from forge.argocd import bootstrap as argocd
from forge.argocd.projects import component_project
from forge.facts.versions import chart_pins
from forge.components.base import Expected
from forge.components.loki import CACHES, CONFIG_OBJECT, WORKLOADS, Loki
from forge.components.prometheus import (ALERTMANAGER_CR, GRAFANA_DATASOURCES, GRAFANA_DEPLOYMENT, GRAFANA_PODS,
                                         NODE_EXPORTER_MONITOR, PROMETHEUS_CR, Prometheus)
from forge.components.loki import GATEWAY_URL as LOKI_URL
from forge.errors import InventoryError
from forge.fleet import components_of as enabled_components
from forge.fleet import load_plan_text
from forge.model.cluster import CONTROL_PLANE_LABEL
from forge.observability import metrics as m
from forge.observability.sizing import LOKI_TARGETS
from forge.upstream.chart import Chart
from forge.upstream.check import check_expected
from forge.upstream.hydrate import crd_api_versions, split_sources
from forge.upstream.reads import redundant_keys, unread_keys
from forge.validate.podsecurity import violations
from forge.validate.values import check_values
from tests.helpers import REPO, inventory_text

CLUSTERS = ["a100", "h200"]


def problems(objects: list[dict[str, Any]], expected: list[Expected]) -> list[tuple[str, str, str]]:
    return [(e.kind, path, why) for e in expected for path, why in check_expected(objects, e)]


def with_loki(cluster, **settings):
    """The cluster with other Loki settings (the inventory check would refuse layouts that need
    more replicas than the 3 control-plane nodes: the values must still be right)."""
    loki = cluster.component_settings["loki"]
    merged = {**cluster.component_settings, "loki": loki.model_validate({**loki.model_dump(exclude_unset=True), **settings})}
    return dataclasses.replace(cluster, component_settings=merged)


# ---- Prometheus: what kube-prometheus-stack renders ---------------------------------------------

def kps_render(values: dict[str, Any]) -> list[dict[str, Any]]:
    """STAND-IN for kube-prometheus-stack 88.5.3 rendering release `prometheus` with our values:
    only the objects and fields the expectations look at, shaped as the real chart rendered them
    (a `*SelectorNilUsesHelmValues: false` gives an empty selector, true `release: prometheus`)."""
    spec = values["prometheus"]["prometheusSpec"]
    prom: dict[str, Any] = {k: spec[k] for k in ("nodeSelector", "tolerations", "scrapeInterval", "evaluationInterval",
                                                  "retention", "retentionSize", "resources", "externalLabels", "replicas")}
    prom["storage"] = spec["storageSpec"]
    if "priorityClassName" in spec:  # the operator's StatefulSet pods take the CR's class
        prom["priorityClassName"] = spec["priorityClassName"]
    for kind in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig"):
        nil_uses = spec.get(f"{kind}SelectorNilUsesHelmValues", True)
        prom[f"{kind}Selector"] = {"matchLabels": {"release": "prometheus"}} if nil_uses else {}
        prom[f"{kind}NamespaceSelector"] = {}
    am = values["alertmanager"]["alertmanagerSpec"]
    admin = values["grafana"]["admin"]
    env = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}] + [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": admin["existingSecret"], "key": admin[key]}}}
        for name, key in (("GF_SECURITY_ADMIN_USER", "userKey"), ("GF_SECURITY_ADMIN_PASSWORD", "passwordKey"))]
    # The subchart's envValueFrom: one env entry per key, its value as valueFrom (templates/_pod.tpl).
    env += [{"name": name, "valueFrom": ref} for name, ref in values["grafana"].get("envValueFrom", {}).items()]
    datasources = {"apiVersion": 1, "datasources": [
        {"name": "Prometheus", "type": "prometheus", "uid": "prometheus",
         "url": "http://prometheus-kube-prometheus-prometheus.monitoring:9090/"},
        *values["grafana"]["additionalDataSources"]]}
    node_exporter = values["prometheus-node-exporter"]["prometheus"]["monitor"]
    ing = values["grafana"].get("ingress", {})
    # The grafana subchart's templates/ingress.yaml (read from the template, not recorded from a
    # hydrate): annotations as given, ingressClassName when set, tls as given, one rule per host.
    ingress = [{"kind": "Ingress", "metadata": {"name": GRAFANA_DEPLOYMENT, "annotations": ing.get("annotations", {})},
                "spec": {**({"ingressClassName": ing["ingressClassName"]} if ing.get("ingressClassName") else {}),
                         "tls": ing.get("tls", []),
                         "rules": [{"host": h, "http": {"paths": [{"path": ing.get("path", "/"), "pathType": "Prefix", "backend": {
                             "service": {"name": GRAFANA_DEPLOYMENT, "port": {"number": 80}}}}]}} for h in ing.get("hosts", [])]}}
               ] if ing.get("enabled") else []
    return [
        *ingress,
        {"kind": "Prometheus", "metadata": {"name": PROMETHEUS_CR}, "spec": prom},
        {"kind": "Alertmanager", "metadata": {"name": ALERTMANAGER_CR},
         "spec": {"nodeSelector": am["nodeSelector"], **{k: am[k] for k in ("configSecret", "priorityClassName", "storage", "replicas") if k in am}}},
        {"kind": "Deployment", "metadata": {"name": GRAFANA_DEPLOYMENT}, "spec": {"template": {
            "metadata": {"labels": {"helm.sh/chart": "grafana-12.11.1", **GRAFANA_PODS}},
            "spec": {"containers": [{"name": "grafana-sc-dashboard", "env": []}, {"name": "grafana", "env": env, "ports": [
                {"name": "grafana", "containerPort": 3000, "protocol": "TCP"}]}]}}}},
        # The subchart's templates/_config.tpl: one `[section]` per map of grafana.ini, sorted, `key = value`.
        {"kind": "ConfigMap", "metadata": {"name": GRAFANA_DEPLOYMENT}, "data": {"grafana.ini": "".join(
            f"[{section}]\n" + "".join(f"{k} = {str(v).lower() if isinstance(v, bool) else v}\n" for k, v in sorted(keys.items()))
            for section, keys in sorted(values["grafana"].get("grafana.ini", {}).items()))}},
        {"kind": "ConfigMap", "metadata": {"name": GRAFANA_DATASOURCES},
         "data": {"datasource.yaml": yaml.safe_dump(datasources, sort_keys=False)}},
        {"kind": "ServiceMonitor", "metadata": {"name": NODE_EXPORTER_MONITOR},
         "spec": {"endpoints": [{"port": "http-metrics", "relabelings": node_exporter["relabelings"]}]}},
    ]


@pytest.mark.parametrize("name", CLUSTERS)
def test_prometheus_expectations_hold_for_what_the_chart_renders(name, clusters):
    cluster = clusters[name]
    expected = Prometheus().expected_in_hydrated(cluster)
    assert problems(kps_render(Prometheus().values(cluster)), expected) == []
    paths = {(e.kind, e.path if isinstance(e.path, str) else ".".join(e.path)) for e in expected}
    assert ("Prometheus", "spec.externalLabels") in paths and ("Alertmanager", "spec.configSecret") in paths
    assert {p for k, p in paths if p.endswith("Selector") and k == "Prometheus"} - {"spec.nodeSelector"} == {
        f"spec.{kind}{which}" for kind in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig")
        for which in ("Selector", "NamespaceSelector")}
    prom = {e.path: e.value for e in expected if e.kind == "Prometheus" and isinstance(e.path, str)}
    days = Prometheus().settings(cluster).retention_days
    assert prom["spec.externalLabels"] == {"cluster": name} and prom["spec.retention"] == f"{days}d"
    assert prom["spec.storage.volumeClaimTemplate.spec"]["resources"]["requests"]["storage"].endswith("Gi")


def test_prometheus_expectations_catch_what_the_chart_could_drop(clusters):
    cluster = clusters["a100"]
    values = Prometheus().values(cluster)
    spec = values["prometheus"]["prometheusSpec"]
    spec["serviceMonitorSelectorNilUsesHelmValues"] = True  # the chart's default: release-labelled only
    spec["externalLabels"] = {}
    spec["retention"] = "10d"
    del values["alertmanager"]["alertmanagerSpec"]["configSecret"]
    values["grafana"]["admin"]["existingSecret"] = "prometheus-grafana"  # the chart's own Secret
    values["grafana"]["additionalDataSources"] = []
    values["prometheus-node-exporter"]["prometheus"]["monitor"]["relabelings"] = []
    del spec["priorityClassName"]  # Prometheus pods at the global default: pre-emptible by workloads
    found = problems(kps_render(values), Prometheus().expected_in_hydrated(cluster))
    assert ("Prometheus", "spec.serviceMonitorSelector",
            'is {"matchLabels": {"release": "prometheus"}}, the inventory asks for {}') in found
    assert ("Prometheus", "spec.externalLabels", 'is {}, the inventory asks for {"cluster": "a100"}') in found
    assert ("Prometheus", "spec.retention", 'is "10d", the inventory asks for "15d"') in found
    assert ("Alertmanager", "spec.configSecret", 'missing: the inventory asks for "alertmanager-config"') in found
    env = "spec.template.spec.containers.name=grafana.env.name=GF_SECURITY_ADMIN_PASSWORD"
    assert [why for kind, path, why in found if path == env][0].startswith('is {"name": "GF_SECURITY_ADMIN_PASSWORD"')
    assert ("ConfigMap", "data.datasource.yaml.datasources.name=Loki.url",
            f'missing: the inventory asks for "{LOKI_URL}"') in found
    assert ("ServiceMonitor", "spec.endpoints.0.relabelings",
            f"is [], the inventory asks for {json.dumps([m.NODE_RELABELING])[:57]}...") in found
    assert ("Prometheus", "spec.priorityClassName", 'missing: the inventory asks for "system-cluster-critical"') in found
    assert len(found) == 9


@pytest.mark.parametrize("name", CLUSTERS)
def test_alertmanager_config_comes_only_from_an_existing_secret(name, clusters):
    am = Prometheus().values(clusters[name])["alertmanager"]["alertmanagerSpec"]
    # useExistingSecret: the chart renders no alertmanager.yaml Secret (found by the hydrated
    # Secret policy: the default one carries the config in Git); configSecret: the one to read.
    assert am["useExistingSecret"] is True and am["configSecret"] == "alertmanager-config"
    assert am["nodeSelector"] == clusters[name].system_node_selector


def test_alertmanager_config_secret_is_an_inventory_setting():
    text = inventory_text("a100").replace("    alertmanager_config_secret: alertmanager-config\n",
                                          "    alertmanager_config_secret: am-receivers\n", 1)
    assert "am-receivers" in text
    cluster = load_plan_text(text, "clusters/a100/inventory.yaml").cluster
    am = Prometheus().values(cluster)["alertmanager"]["alertmanagerSpec"]
    assert am["configSecret"] == "am-receivers"
    assert Expected("Alertmanager", ALERTMANAGER_CR, "spec.configSecret", "am-receivers") in Prometheus().expected_in_hydrated(cluster)


def test_bad_alertmanager_config_secret_is_reported_with_file_and_line():
    text = inventory_text("a100").replace("    alertmanager_config_secret: alertmanager-config\n",
                                          "    alertmanager_config_secret: Bad_Name\n", 1)
    line = text.splitlines().index("    alertmanager_config_secret: Bad_Name") + 1
    with pytest.raises(InventoryError) as err:
        load_plan_text(text, "clusters/a100/inventory.yaml")
    assert [str(p) for p in err.value.problems] == [
        f"clusters/a100/inventory.yaml:{line}: components.prometheus.alertmanager_config_secret: 'Bad_Name' does not "
        "match the expected form ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"]


@pytest.mark.parametrize("name", CLUSTERS)
def test_grafana_values_set_no_key_the_packaged_chart_does_not_read(name, clusters):
    # grafana 12.11.1 (kube-prometheus-stack 88.5.3's subchart) is packaged without templates/tests
    # (its .helmignore lists tests/ since the chart's .helmignore was standardised): hydrating the
    # real chart reported grafana.testFramework.enabled as read by no template. There is no test
    # Pod to turn off.
    assert "testFramework" not in Prometheus().values(clusters[name])["grafana"]


@pytest.mark.parametrize("name", CLUSTERS)
def test_prometheus_may_deploy_its_control_plane_services_to_kube_system(name, clusters):
    cluster = clusters[name]
    assert Prometheus().namespaces(cluster) == ("monitoring", "kube-system")
    components = list(enabled_components(cluster))
    prometheus = next(c for c in components if c.name == "prometheus")
    project = component_project(cluster, prometheus, components, chart_pins(REPO)["kube-prometheus-stack"])
    assert {"server": "https://kubernetes.default.svc", "namespace": "kube-system"} in project["spec"]["destinations"]


@pytest.mark.parametrize("name", CLUSTERS)
def test_new_prometheus_values_are_chart_keys(name, clusters, upstream):
    # configSecret is documented only in a comment of the chart's values.yaml: declared.
    values = Prometheus().values(clusters[name])
    assert check_values(values, upstream / "kube-prometheus-stack-88.5.3", Prometheus.declared_values) == []
    assert "alertmanager.alertmanagerSpec.configSecret" in Prometheus.declared_values


# ---- Loki: what the loki chart renders ----------------------------------------------------------

def loki_render(values: dict[str, Any]) -> list[dict[str, Any]]:
    """STAND-IN for loki 7.3.0 rendering release `loki` with our values: the ConfigMap `loki`
    whose config.yaml the chart builds with `tpl .Values.loki.config .`, and one workload per
    target with replicas > 0, with only the fields the expectations look at. The memcached caches
    (StatefulSets loki-chunks-cache and loki-results-cache) render in every deployment mode while
    chunksCache/resultsCache and memcached are enabled (their defaults in 7.3.0), with their own
    priorityClassName only: they ignore global.priorityClassName."""
    loki, s3 = values["loki"], values["loki"]["storage"]["s3"]
    s3_config = {"access_key_id": s3["accessKeyId"], "bucketnames": loki["storage"]["bucketNames"]["chunks"],
                 "endpoint": s3["endpoint"], "insecure": False, "region": s3["region"], "s3forcepathstyle": False,
                 "secret_access_key": s3["secretAccessKey"]}
    config = {
        "auth_enabled": loki["auth_enabled"],
        "common": {"path_prefix": "/var/loki", "replication_factor": loki["commonConfig"]["replication_factor"],
                   "storage": {"s3": s3_config}},
        "compactor": loki["compactor"],
        "limits_config": {"reject_old_samples": True, **loki["limits_config"]},
        "schema_config": loki["schemaConfig"],
    }
    out: list[dict[str, Any]] = [{"kind": "ConfigMap", "metadata": {"name": CONFIG_OBJECT},
                                  "data": {"config.yaml": yaml.safe_dump(config)}}]
    for target, (kind, name) in WORKLOADS.items():
        if values[target]["replicas"] > 0:
            # The chart's globals reach every target but the single binary (its values' `scope:`
            # comments; single-binary/statefulset.yaml reads singleBinary.extraEnvFrom alone).
            env_from = [*(values["global"]["extraEnvFrom"] if target != "singleBinary" else []),
                        *values[target].get("extraEnvFrom", [])]
            pod = {"nodeSelector": values[target]["nodeSelector"], "containers": [{"name": "loki", "envFrom": env_from}]}
            out.append({"kind": kind, "metadata": {"name": name},
                        "spec": {"replicas": values[target]["replicas"], "template": {"spec": pod}}})
    for section, name in (("chunksCache", CACHES[0]), ("resultsCache", CACHES[1])):
        cache = values.get(section, {})
        if cache.get("enabled", True) and values.get("memcached", {}).get("enabled", True):
            pod = {"nodeSelector": cache.get("nodeSelector", {}), "containers": [{"name": "memcached"}]}
            if "priorityClassName" in cache:
                pod["priorityClassName"] = cache["priorityClassName"]
            out.append({"kind": "StatefulSet", "metadata": {"name": name},
                        "spec": {"replicas": cache.get("replicas", 1), "template": {"spec": pod}}})
    return out


@pytest.mark.parametrize("daily_gb, mode", [(None, "SimpleScalable"), (5.0, "SingleBinary"), (2500.0, "Distributed")])
def test_loki_expectations_hold_for_what_the_chart_renders(daily_gb, mode, clusters):
    cluster = with_loki(clusters["a100"], daily_log_gb=daily_gb) if daily_gb else clusters["a100"]
    values = Loki().values(cluster)
    assert values["deploymentMode"] == mode
    expected = Loki().expected_in_hydrated(cluster)
    assert problems(loki_render(values), expected) == []
    replicas = {e.name: e.value for e in expected if e.path == "spec.replicas"}
    assert set(replicas) == {WORKLOADS[t][1] for t in LOKI_TARGETS[mode]}
    config = {e.path[2:]: e.value for e in expected if e.kind == "ConfigMap"}
    assert config[("common", "storage", "s3", "bucketnames")] == cluster.settings.s3.buckets["loki"]
    assert config[("common", "storage", "s3", "endpoint")] == cluster.settings.s3.endpoint
    assert config[("limits_config", "retention_period")] == "720h"
    priority = {e.name: e.value for e in expected if e.path == "spec.template.spec.priorityClassName"}
    assert priority == {name: "system-cluster-critical" for name in CACHES}  # in every mode


def test_loki_expectations_catch_what_the_chart_could_drop(clusters):
    cluster = clusters["a100"]
    rendered = loki_render(Loki().values(cluster))
    config = yaml.safe_load(rendered[0]["data"]["config.yaml"])
    config["common"]["storage"]["s3"]["bucketnames"] = "chunks"  # the chart's placeholder bucket
    del config["limits_config"]["retention_period"]
    rendered[0]["data"]["config.yaml"] = yaml.safe_dump(config)
    write = next(o for o in rendered if o["metadata"]["name"] == "loki-write")
    write["spec"]["replicas"] = 1
    write["spec"]["template"]["spec"]["containers"][0]["envFrom"] = []
    # The caches at the global default priority (their class value dropped): pre-emptible by workloads.
    del next(o for o in rendered if o["metadata"]["name"] == "loki-chunks-cache")["spec"]["template"]["spec"]["priorityClassName"]
    found = problems(rendered, Loki().expected_in_hydrated(cluster))
    assert found == [
        ("ConfigMap", "data.config.yaml.common.storage.s3.bucketnames", 'is "chunks", the inventory asks for "exa-loki-a100"'),
        ("ConfigMap", "data.config.yaml.limits_config.retention_period", 'missing: the inventory asks for "720h"'),
        ("StatefulSet", "spec.template.spec.priorityClassName", 'missing: the inventory asks for "system-cluster-critical"'),
        ("StatefulSet", "spec.replicas", "is 1, the inventory asks for 3"),
        ("StatefulSet", "spec.template.spec.containers.name=loki.envFrom",
         'is [], the inventory asks for [{"secretRef": {"name": "s3-credentials"}}]'),
    ]


def test_loki_distributed_layout_renders_with_the_real_chart_rules(clusters):
    """loki 7.3.0 fails to render a Distributed target with replicas > 1 and no maxUnavailable
    (`helm template`: "`.Values.queryFrontend.maxUnavailable` must be set ..."), and by default
    splits ingesters into three zone StatefulSets whose own empty nodeSelectors replace ours."""
    values = Loki().values(with_loki(clusters["a100"], daily_log_gb=2500.0))
    assert values["deploymentMode"] == "Distributed"
    for target in LOKI_TARGETS["Distributed"]:
        entry = values[target]
        assert entry.get("maxUnavailable") == (1 if entry["replicas"] > 1 else None), target
        assert entry["nodeSelector"] == {CONTROL_PLANE_LABEL: ""}
    assert values["ingester"]["zoneAwareReplication"] == {"enabled": False}
    for daily in (None, 5.0):
        other = Loki().values(with_loki(clusters["a100"], daily_log_gb=daily))
        assert not any("maxUnavailable" in other[t] or "zoneAwareReplication" in other[t]
                       for targets in LOKI_TARGETS.values() for t in targets)


def test_loki_distributed_values_are_chart_keys(clusters, upstream):
    values = Loki().values(with_loki(clusters["a100"], daily_log_gb=2500.0))
    assert check_values(values, upstream / "loki-7.3.0", Loki.declared_values) == []


def test_loki_layout_keys_are_not_called_redundant(clusters, upstream):
    # The layout follows the inventory: equal to the chart's default today (SimpleScalable, 3
    # writers) is no reason to warn. loki.storage.type s3 stays a deliberate, reported pin.
    defaults = yaml.safe_load((upstream / "loki-7.3.0" / "values.yaml").read_text())
    chart = Chart("loki", "7.3.0", "application", defaults, {}, {}, [], {})
    values = Loki().values(clusters["a100"])
    assert [k for k, _ in redundant_keys(chart, values, Loki.inventory_values)] == ["loki.storage.type"]
    assert {"deploymentMode", "write.replicas", "singleBinary.replicas", "loki.commonConfig.replication_factor"} <= {
        k for k, _ in redundant_keys(chart, values)}


# ---- the tooling fixes the real charts needed ---------------------------------------------------

def tiny_chart(templates: dict[str, str], values: dict[str, Any]) -> Chart:
    """A chart written for this test (not upstream's): templates inline, default values."""
    return Chart("t", "1.0.0", "application", values, {f"templates/{n}": t for n, t in templates.items()}, {}, [], {})


def test_reads_follow_template_code_in_a_values_string_passed_to_tpl():
    # Loki's pattern: the whole config is a template in values.yaml, run by `tpl .Values.loki.config .`,
    # which reads .Values.loki.storage (and calls the chart's helpers).
    defaults = {"config": "auth: {{ .Values.a.auth }}\n{{- include \"t.store\" . }}\n{{- with .Values.limits }}{{ toYaml . }}{{ end }}",
                "a": {}, "limits": {}}
    templates = {"_h.tpl": '{{- define "t.store" -}}bucket: {{ .Values.store.bucket }}{{- end }}',
                 "cm.yaml": "data: {{ tpl .Values.config . | b64enc }}"}
    values = {"a": {"auth": False, "unused": 1}, "store": {"bucket": "b", "endpont": "x"}, "limits": {"retention": "1h"}}
    assert [k for k, _ in unread_keys(tiny_chart(templates, defaults), values)] == ["a.unused", "store.endpont"]
    # Our values replace the string: its reads are what count.
    values = {"config": "x: {{ .Values.z }}", "z": 1, "a": {"auth": True}}
    assert [k for k, _ in unread_keys(tiny_chart(templates, defaults), values)] == ["a.auth"]


def test_expected_paths_select_list_items_by_name_and_read_yaml_strings():
    obj = {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"containers": [
        {"name": "side", "env": [{"name": "X", "value": "1"}]},
        {"name": "main", "env": [{"name": "X", "value": "2"}, {"name": "Y", "value": "3"}]}]},
        "data": {"c.yaml": "a:\n  b: [1, 2]\n"}}
    check = lambda path, value: check_expected([obj], Expected("Deployment", "d", path, value))  # noqa: E731
    assert check(("spec", "containers", "name=main", "env", "name=X", "value"), "2") == []
    assert check(("spec", "containers", "1", "env", "1", "value"), "3") == []
    assert check(("data", "c.yaml", "a", "b"), [1, 2]) == []
    assert check(("spec", "containers", "name=nope", "env"), []) == [
        ("spec.containers.name=nope.env", "missing: the inventory asks for []")]
    obj["spec"]["containers"][0]["name"] = "main"  # two matches: no single answer
    assert check(("spec", "containers", "name=main", "env"), [])[0][1].startswith("missing")


def test_hydrate_takes_the_overlay_after_a_remote_base(clusters):
    # training-operator's Application lists kubeflow's manifests first, then our overlay.
    from forge.components.training_operator import TrainingOperator

    cluster = clusters["a100"]
    sources = argocd.component_application(cluster, TrainingOperator(), None)["spec"]["sources"]
    assert sources[0]["path"] != "overlays/a100/training-operator"
    assert split_sources(sources)[1]["path"] == "overlays/a100/training-operator"


def test_crd_api_versions_reads_crds_with_a_bare_equals_in_an_enum():
    # prometheus-operator's AlertmanagerConfig CRD lists matchType `=` unquoted, which PyYAML's
    # SafeLoader cannot construct (written for this test in that shape).
    crd = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        properties:
          matchType:
            enum:
            - '!='
            - =
"""
    assert crd_api_versions(crd) == {"example.com/v1alpha1", "example.com/v1alpha1/Widget"}


def test_objects_outside_the_app_projects_namespaces_are_reported(clusters):
    """What kube-prometheus-stack did before Prometheus listed kube-system: its control-plane
    Services there would have made Argo CD refuse the whole `prometheus` Application. Each
    component has its own AppProject now: Loki's may not put a Service in kube-system."""
    from forge.argocd.projects import component_project, fence_problems

    cluster = clusters["a100"]
    components = list(enabled_components(cluster))
    by_name = {c.name: c for c in components}
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "prometheus-kube-prometheus-kube-scheduler", "namespace": "kube-system"}}
    loki = component_project(cluster, by_name["loki"], components, chart_pins(REPO)["loki"])
    assert fence_problems(service, loki, "loki", components) == [(
        "metadata.namespace", "namespace 'kube-system' is not a destination of AppProject forge-a100-loki: Argo CD would "
        "refuse the sync (list it in the component's namespaces())")]
    prometheus = component_project(cluster, by_name["prometheus"], components, chart_pins(REPO)["kube-prometheus-stack"])
    assert fence_problems(service, prometheus, "monitoring", components) == []
    unnamed = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "hooks-sa"}}  # goes to the destination namespace
    assert fence_problems(unnamed, loki, "loki", components) == []


# The pod security contexts loki 7.3.0 renders, as its values.yaml sets them (recorded from the
# chart; `upstream` checks them against the chart's values when the data is there): none names a
# seccomp profile, so in the loki namespace (warned at `restricted`) the real chart's hydrated
# output had 9 failing containers per cluster before our values added one.
LOKI_POD_CONTEXTS = {
    "loki": {"fsGroup": 10001, "fsGroupChangePolicy": "OnRootMismatch", "runAsGroup": 10001, "runAsNonRoot": True, "runAsUser": 10001},
    "gateway": {"fsGroup": 101, "runAsGroup": 101, "runAsNonRoot": True, "runAsUser": 101},
    "memcached": {"runAsNonRoot": True, "runAsUser": 11211, "runAsGroup": 11211, "fsGroup": 11211},
}
RESTRICTED_CONTAINER = {"readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": False}


@pytest.mark.parametrize("name", CLUSTERS)
def test_loki_pods_meet_restricted_pod_security_with_our_values(name, clusters):
    values = Loki().values(clusters[name])
    pod_contexts = {"loki": values["loki"]["podSecurityContext"], "gateway": values["gateway"]["podSecurityContext"],
                    "memcached": values["memcached"]["podSecurityContext"]}
    for key, chart_default in LOKI_POD_CONTEXTS.items():
        merged = {**chart_default, **pod_contexts[key]}  # helm merges our map into the chart's
        # two containers, as the backend (loki and its rules sidecar) and the caches (memcached and its exporter) have
        spec = {"securityContext": merged, "containers": [{"name": "a", "securityContext": dict(RESTRICTED_CONTAINER)},
                                                          {"name": "b", "securityContext": dict(RESTRICTED_CONTAINER)}]}
        assert violations(spec, "restricted") == [], key


def test_loki_pod_context_stand_ins_are_the_charts(upstream):
    chart = yaml.safe_load((upstream / "loki-7.3.0" / "values.yaml").read_text())
    for key, recorded in LOKI_POD_CONTEXTS.items():
        assert chart[key]["podSecurityContext"] == recorded, key
