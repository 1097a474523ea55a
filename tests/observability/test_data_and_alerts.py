"""issue 22 items 10-11 on the Prometheus stack: redundant Prometheus and Alertmanager, the
control-plane monitors as the cluster exposes them, and one rejection per new inventory field."""
from __future__ import annotations

import pytest

from forge.components.prometheus import Prometheus
from tests.helpers import edit, generated, inventory_file, inventory_text, line_of, model, only_problem, problems_of


def values(cluster: str) -> dict:
    return generated(f"overlays/{cluster}/prometheus/values.yaml")


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_prometheus_and_alertmanager_run_two_replicas_on_different_nodes(cluster):
    v = values(cluster)
    for spec in (v["prometheus"]["prometheusSpec"], v["alertmanager"]["alertmanagerSpec"]):
        assert (spec["replicas"], spec["podAntiAffinity"], spec["podAntiAffinityTopologyKey"]) == (2, "hard", "kubernetes.io/hostname")


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_kubeadm_control_plane_monitors_that_cannot_scrape_are_off_with_their_rules(cluster):
    v = values(cluster)
    for key in ("kubeScheduler", "kubeControllerManager", "kubeProxy", "kubeEtcd"):
        assert v[key] == {"enabled": False}
    assert v["defaultRules"]["rules"] == {"kubeSchedulerAlerting": False, "kubeSchedulerRecording": False,
                                          "kubeControllerManager": False, "kubeProxy": False, "etcd": False}


def test_an_exposed_kubeadm_control_plane_is_monitored():
    text = edit(inventory_text("h200"), "control_plane: kubeadm\n", "control_plane: kubeadm-exposed\n")
    v = Prometheus().values(model("h200", text))
    assert all(v[k] == {"enabled": True} for k in ("kubeScheduler", "kubeControllerManager", "kubeProxy", "kubeEtcd"))
    assert all(v["defaultRules"]["rules"].values())


def test_rejects_an_unknown_control_plane():
    text = edit(inventory_text("h200"), "control_plane: kubeadm\n", "control_plane: kubespray\n")
    p = only_problem(problems_of("h200", text), "components.prometheus.control_plane")
    assert (p.file, p.line) == (inventory_file("h200"), line_of(text, "control_plane: kubespray"))
    assert "kubeadm" in p.message and "managed" in p.message


def test_rejects_a_single_replica():
    text = edit(inventory_text("h200"), "    replicas: 2  #", "    replicas: 1  #")
    p = only_problem(problems_of("h200", text), "components.prometheus.replicas")
    assert p.line == line_of(text, "replicas: 1  #")
    assert p.message == "input should be greater than or equal to 2"


def test_rejects_more_replicas_than_system_nodes():
    text = edit(inventory_text("h200"), "    replicas: 2  #", "    replicas: 4  #")
    p = only_problem(problems_of("h200", text), "components.prometheus.replicas")
    assert p.message == ("4 replicas of Prometheus and Alertmanager need as many nodes with role 'system' (one each); "
                         "the inventory has 3: lower replicas or add system nodes")
    assert (p.file, p.line) == (inventory_file("h200"), line_of(text, "replicas: 4  #"))
