"""The pods a flow names (forge.twin.flows), labelled as the charts and propeller label them.

The box runs no chart pods unless the charts are hydrated, so each peer is a representative pod:
its namespace and labels come from the facts of the component that runs it (JupyterHub's chart
labels, Alluxio's proxy selector, the Prometheus pods' label of forge.components.network), a task
is the pod propeller would build from the project's PodTemplate (forge.twin.submit), admitted by
the box's API server with a dry run (its admission policies and Kueue's webhook add their labels),
and Prometheus's scrape targets are every PodMonitor endpoint stored in the API server. Where
the box has pods a target selects (forge's own DaemonSets), their real labels and ports are used.
The Kubernetes API is not a pod: the addresses of its `default/kubernetes` Endpoints.
"""
from __future__ import annotations

from typing import Any, Callable

from forge.components import jupyterhub, network
from forge.components.alluxio import NAMESPACE as ALLUXIO_NAMESPACE, pod_labels as alluxio_pods
from forge.components.flyte.objects import NAMESPACE as FLYTE_NAMESPACE, RELEASE as FLYTE_RELEASE
from forge.components.flyte.plan import namespace_for
from forge.components.kuberay_operator import KuberayOperator
from forge.components.loki import NAMESPACE as LOKI_NAMESPACE
from forge.components.prometheus import GRAFANA_PODS
from forge.errors import ForgeError
from forge.fleet import ClusterPlan
from forge.twin.flows import Peer
from forge.twin.kube import ApiError, Kube
from forge.twin.scenario import Job
from forge.twin.submit import Propeller, build

MONITORING_API = "monitoring.coreos.com/v1"
DNS_PODS = {"k8s-app": "kube-dns"}  # CoreDNS as kubeadm and EKS label it, in kube-system
FLYTE_PODS = {"app.kubernetes.io/name": "flyte-binary", "app.kubernetes.io/instance": FLYTE_RELEASE,
              "app.kubernetes.io/component": "flyte-binary"}  # chart flyte-binary's Deployment
KUBERAY_PODS = {"app.kubernetes.io/name": KuberayOperator.name, "app.kubernetes.io/instance": KuberayOperator.name}
INGRESS_PODS = {"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "controller"}
PROMETHEUS_PODS = {**network.PROMETHEUS_PODS, "app.kubernetes.io/managed-by": "prometheus-operator"}
# chart loki 7.3.0's gateway (its selector labels and component): Grafana's Loki data source
LOKI_GATEWAY_PODS = {"app.kubernetes.io/name": "loki", "app.kubernetes.io/instance": "loki", "app.kubernetes.io/component": "gateway"}


class Peers:
    """Builds the peers of one box, each once."""

    def __init__(self, kube: Kube, plan: ClusterPlan, propeller: Propeller) -> None:
        self.kube, self.plan, self.propeller = kube, plan, propeller
        self._tasks: dict[str, Peer] = {}

    def of(self, kind: str, project: str | None, domain: str | None) -> list[Peer]:
        """The peers `kind` names (for `any` and `scrape-targets`, several)."""
        makers: dict[str, Callable[[], list[Peer]]] = {
            "any": self._any, "task": lambda: [self.task(project, domain)],
            "user-server": lambda: [self.user_server(project)],
            "jupyterhub-hub": lambda: [self.hub_pod("hub", project)], "jupyterhub-proxy": lambda: [self.hub_pod("proxy", project)],
            "flyte": lambda: [self._need("flyte", Peer("flyte", FLYTE_NAMESPACE, FLYTE_PODS))],
            "alluxio-proxy": lambda: [self._need("alluxio", Peer("alluxio-proxy", ALLUXIO_NAMESPACE, alluxio_pods("alluxio-proxy")))],
            "prometheus": lambda: [self._need("prometheus", Peer("prometheus", network.MONITORING, PROMETHEUS_PODS))],
            "grafana": lambda: [self._need("prometheus", Peer("grafana", network.MONITORING, GRAFANA_PODS))],
            "loki-gateway": lambda: [self._need("loki", Peer("loki-gateway", LOKI_NAMESPACE, LOKI_GATEWAY_PODS))],
            "kuberay-operator": lambda: [self._need(KuberayOperator.name, Peer(KuberayOperator.name, KuberayOperator.namespace, KUBERAY_PODS))],
            "ingress-controller": lambda: [Peer("ingress-controller", self.plan.cluster.settings.ingress_namespace, INGRESS_PODS)],
            "dns": lambda: [Peer("dns", "kube-system", DNS_PODS)],
            "kubernetes-api": lambda: [self.api_server()], "scrape-targets": self.scrape_targets,
        }
        return makers[kind]()

    def _need(self, component: str, peer: Peer) -> Peer:
        if self.plan.component(component) is None:
            raise ForgeError(f"twin: flow names {peer.name}, but {self.plan.name} does not run {component}")
        return peer

    def _projects(self) -> list[str]:
        flyte = self.plan.cluster.component_settings.get("flyte")
        return [p.name for p in flyte.projects] if flyte else []

    def _any(self) -> list[Peer]:
        """Every pod a flow may name: each project's task in each domain, each hub's pods and user servers, the rest."""
        flyte = self.plan.cluster.component_settings.get("flyte")
        out = [self.task(p, d.name) for p in self._projects() for d in (flyte.domains if flyte else [])]
        hub = self.plan.component(jupyterhub.JupyterHub.name)
        for project in hub.projects(self.plan.cluster) if hub else []:
            out += [self.user_server(project), self.hub_pod("hub", project), self.hub_pod("proxy", project)]
        for kind in ("flyte", "alluxio-proxy", "prometheus", "grafana", "loki-gateway", "kuberay-operator"):
            try:
                out += self.of(kind, None, None)
            except ForgeError:
                continue  # a component this cluster does not run
        return out + self.of("ingress-controller", None, None) + self.of("dns", None, None)

    def task(self, project: str | None, domain: str | None) -> Peer:
        """The pod propeller would start for a plain container task, as the API server admits it."""
        if not project or not domain:
            raise ForgeError("twin: a flow's task names its project and domain")
        key = namespace_for(project, domain)
        if key not in self._tasks:
            job = Job(name="flow-probe", kind="Pod", project=project, domain=domain, resources={"cpu": "1", "memory": "1Gi"})
            pod = build(self.kube, self.propeller, job, "flow-probe", 1, "flows")
            try:
                admitted = self.kube.apply(pod, dry_run=True)
            except ApiError as exc:
                raise ForgeError(f"twin: the task pod of {key} is refused by the box's API server: {exc.message}") from None
            self._tasks[key] = Peer(f"task ({key})", key, admitted["metadata"].get("labels") or {})
        return self._tasks[key]

    def _hub(self, project: str | None) -> tuple[jupyterhub.JupyterHub, str]:
        hub = self.plan.component(jupyterhub.JupyterHub.name)
        if hub is None:
            raise ForgeError(f"twin: flow names a JupyterHub pod, but {self.plan.name} does not run JupyterHub")
        projects = hub.projects(self.plan.cluster)
        if project not in projects:
            raise ForgeError(f"twin: flow names JupyterHub project {project!r}; {self.plan.name}'s hubs: {', '.join(projects)}")
        return hub, hub.release_of(self.plan.cluster, project)

    def hub_pod(self, role: str, project: str | None) -> Peer:
        hub, release = self._hub(project)
        return Peer(f"jupyterhub-{role} ({release})", hub.namespace, jupyterhub.chart_pod_labels(role, release))

    def user_server(self, project: str | None) -> Peer:
        """A user server KubeSpawner starts in the project's development namespace, with forge's extraLabels."""
        hub, release = self._hub(project)
        values = jupyterhub.hub_values(self.plan.cluster, hub.settings(self.plan.cluster), project)
        labels = {**jupyterhub.chart_pod_labels(jupyterhub.USER_SERVER, release), **values["singleuser"]["extraLabels"]}
        ns = namespace_for(project, jupyterhub.DOMAIN)
        return Peer(f"user-server ({ns})", ns, labels, port=jupyterhub.SERVER_PORT)

    def api_server(self) -> Peer:
        """The API server where the `kubernetes` Service sends pods: its Endpoints' address and port
        (a CNI judges egress after the Service's translation). The box's API server listens on
        loopback, which it never publishes there: then the Service's own address and port."""
        endpoints = self.kube.get("v1", "Endpoints", "kubernetes", "default") or {}
        subsets = endpoints.get("subsets") or [{}]
        ips = [a["ip"] for a in subsets[0].get("addresses") or []]
        ports = [p["port"] for p in subsets[0].get("ports") or []]
        if ips and ports:
            return Peer("kubernetes-api", None, ip=ips[0], port=ports[0])
        service = (self.kube.get("v1", "Service", "kubernetes", "default") or {}).get("spec") or {}
        if not service.get("clusterIP") or not service.get("ports"):
            raise ForgeError("twin: the box's API server publishes neither its address nor the default/kubernetes Service")
        return Peer("kubernetes-api", None, ip=service["clusterIP"], port=service["ports"][0]["port"])

    def scrape_targets(self) -> list[Peer]:
        """One peer per endpoint of every PodMonitor stored in the box, in each namespace it selects."""
        out = []
        for monitor in sorted(self.kube.list(MONITORING_API, "PodMonitor"), key=lambda m: (m["metadata"]["namespace"], m["metadata"]["name"])):
            spec, meta = monitor.get("spec") or {}, monitor["metadata"]
            namespaces = ((spec.get("namespaceSelector") or {}).get("matchNames")) or [meta["namespace"]]
            for ns in namespaces:
                for endpoint in spec.get("podMetricsEndpoints") or []:
                    out.append(self._target(f"{meta['namespace']}/{meta['name']}", ns, spec.get("selector") or {}, endpoint))
        return out

    def _target(self, monitor: str, ns: str, selector: dict[str, Any], endpoint: dict[str, Any]) -> Peer:
        port = endpoint.get("portNumber") or endpoint.get("targetPort")
        pods = self.kube.list("v1", "Pod", ns, selector=_selector_text(selector)) or self._templates(ns, selector)
        labels = (pods[0]["metadata"].get("labels") or {}) if pods else _labels_for(selector, monitor)
        if not isinstance(port, int):
            name = endpoint.get("port") or port
            found = [p["containerPort"] for pod in pods[:1] for c in pod["spec"].get("containers") or []
                     for p in c.get("ports") or [] if p.get("name") == name]
            if not found:
                raise ForgeError(f"twin: PodMonitor {monitor} scrapes port {name!r} by name and no pod in the box "
                                 f"resolves it: give the endpoint a portNumber")
            port = found[0]
        return Peer(f"scrape target {monitor} ({ns})", ns, labels, port=int(port))


    def _templates(self, ns: str, selector: dict[str, Any]) -> list[dict[str, Any]]:
        """The pod templates of the workloads stored in `ns` that `selector` matches (their pods
        may not be made yet), as pods."""
        out = []
        for kind in ("DaemonSet", "Deployment", "StatefulSet"):
            for obj in self.kube.list("apps/v1", kind, ns):
                template = (obj.get("spec") or {}).get("template") or {}
                if _matches(selector, (template.get("metadata") or {}).get("labels") or {}):
                    out.append({"metadata": template.get("metadata") or {}, "spec": template.get("spec") or {}})
        return out


def _matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether `labels` satisfy a label selector (only to find a named port's number)."""
    tests = {"In": lambda e: labels.get(e["key"]) in (e.get("values") or []),
             "NotIn": lambda e: labels.get(e["key"]) not in (e.get("values") or []),
             "Exists": lambda e: e["key"] in labels, "DoesNotExist": lambda e: e["key"] not in labels}
    return (all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())
            and all(tests.get(e.get("operator"), lambda e: False)(e) for e in selector.get("matchExpressions") or []))


def _selector_text(selector: dict[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        op = e.get("operator")
        if op in ("In", "NotIn"):
            parts.append(f"{e['key']} {op.lower()} ({','.join(e.get('values') or [])})")
        else:
            parts.append(e["key"] if op == "Exists" else f"!{e['key']}")
    return ",".join(parts)


def _labels_for(selector: dict[str, Any], monitor: str) -> dict[str, str]:
    """Labels of a pod `selector` matches: its matchLabels, the first value of each In, each Exists."""
    labels = dict(selector.get("matchLabels") or {})
    for e in selector.get("matchExpressions") or []:
        if e.get("operator") == "In" and e.get("values"):
            labels[e["key"]] = e["values"][0]
        elif e.get("operator") == "Exists":
            labels[e["key"]] = "true"
        elif e.get("operator") not in ("NotIn", "DoesNotExist"):
            raise ForgeError(f"twin: PodMonitor {monitor}: selector operator {e.get('operator')!r} is not one of In, NotIn, Exists, DoesNotExist")
    return labels
