"""A developer pod started the way JupyterHub starts it (docs/twin.md "Developer pods"), and the
user's home as the cluster's StorageClass provisions it.

The hub's KubeSpawner (kubespawner 7, chart jupyterhub 4.4.0: files/hub/jupyterhub_config.py)
makes, from forge's hub values (forge.components.jupyterhub.hub_values), in the project's
development namespace:
- the PersistentVolumeClaim `claim-<user>` on `singleuser.storage.dynamic.storageClass` (chart
  defaults: 10Gi, ReadWriteOnce), once: stopping a server keeps it, the next spawn mounts it again;
- the Pod `jupyter-<user>`: the chart's labels and `singleuser.extraLabels` (Kueue's queue and
  priority labels), PriorityClass from `KubeSpawner.priority_class_name`, the profile's
  `kubespawner_override` as resources (cpu/mem guarantee and limit, `extra_resource_limits`;
  ByteSpecification's G is 1024^3), the chart's user-pod tolerations and `extraTolerations`, the
  home mounted at /home/jovyan, uid 1000 and fsGroup 100 without privilege escalation, and the
  chart's `block-cloud-metadata` init container (privileged, NET_ADMIN) unless
  `singleuser.cloudMetadata.blockWithIptables` is false.
Both are created as the hub's ServiceAccount (Impersonate-User): the Role forge grants the hub in
that namespace is what lets it, as on the cluster.

Homes: the StorageClass is a prerequisite of the cluster (not in git), so the box stands in for
its provisioner, box-only: a network class (anything not in
forge.components.jupyterhub.NODE_LOCAL_CLASSES) binds at once to a volume any node mounts; a
node-local class (rancher's local-path) waits for the first consumer and pins the volume to the
node the scheduler chose, as local-path-provisioner does.
"""
from __future__ import annotations

from typing import Any

from forge.components import jupyterhub
from forge.errors import ForgeError
from forge.facts.versions import chart_pin
from forge.fleet import ClusterPlan
from forge.twin.kube import Kube

HOME_MOUNT = "/home/jovyan"  # singleuser.storage.homeMountPath
CAPACITY = "10Gi"  # singleuser.storage.capacity
ACCESS_MODES = ["ReadWriteOnce"]  # singleuser.storage.dynamic.storageAccessModes
UID, FS_GID = 1000, 100  # singleuser.uid, singleuser.fsGid
# singleuser.image and singleuser.networkTools.image: the chart's own, tagged with its version
IMAGE, NETWORK_TOOLS = "quay.io/jupyterhub/k8s-singleuser-sample", "quay.io/jupyterhub/k8s-network-tools"
# scheduling.userPods.tolerations (the chart's dedicated user nodes)
USER_POD_TOLERATIONS = [{"key": "hub.jupyter.org/dedicated", "operator": "Equal", "value": "user", "effect": "NoSchedule"},
                        {"key": "hub.jupyter.org_dedicated", "operator": "Equal", "value": "user", "effect": "NoSchedule"}]
SELECTED_NODE = "volume.kubernetes.io/selected-node"  # the scheduler's choice for a WaitForFirstConsumer claim
NETWORK_PROVISIONER = "forge.exa.ai/twin-network-homes"  # box-only: the cluster's network class stood in
LOCAL_PROVISIONER = "rancher.io/local-path"
_BYTES = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}


def _bytes(spec: Any) -> str:
    """jupyterhub.traitlets.ByteSpecification: '32G' is 32 x 1024^3 bytes."""
    text = str(spec)
    return str(int(float(text[:-1]) * _BYTES[text[-1]])) if text[-1:] in _BYTES else text


class Spawner:
    """The hubs of one box: their values, their ServiceAccounts, the homes' provisioner."""

    def __init__(self, kube: Kube, plan: ClusterPlan, label: str) -> None:
        self.kube, self.plan, self.label = kube, plan, label  # label: key of the scenario label
        self.namespaces: set[str] = set()  # where homes were claimed (the provisioner looks only there)

    @property
    def hub(self) -> jupyterhub.JupyterHub | None:
        return self.plan.component(jupyterhub.JupyterHub.name)

    def values(self, project: str) -> dict[str, Any]:
        if self.hub is None:
            raise ForgeError(f"twin: a spawn needs JupyterHub, and {self.plan.name} does not run it")
        projects = self.hub.projects(self.plan.cluster)
        if project not in projects:
            raise ForgeError(f"twin: no JupyterHub for project {project!r} on {self.plan.name} (hubs: {', '.join(projects)})")
        return jupyterhub.hub_values(self.plan.cluster, self.hub.settings(self.plan.cluster), project)

    def hub_kube(self, project: str) -> Kube:
        """The hub's own identity: its ServiceAccount (the chart's `<fullname>-hub`)."""
        return self.kube.as_user(f"system:serviceaccount:{self.hub.namespace}:{jupyterhub.hub_name(project)}-hub")

    def objects(self, project: str, user: str, profile: str, scenario: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the home's PersistentVolumeClaim, the server's Pod) KubeSpawner would create."""
        values = self.values(project)
        single, spawner = values["singleuser"], values["hub"]["config"]["KubeSpawner"]
        chosen = next((p for p in single["profileList"] if p["slug"] == profile), None)
        if chosen is None:
            raise ForgeError(f"twin: hub {project} has no profile {profile!r} (has: {', '.join(p['slug'] for p in single['profileList'])})")
        o = chosen["kubespawner_override"]
        release = self.hub.release_of(self.plan.cluster, project)
        labels = {**jupyterhub.chart_pod_labels(jupyterhub.USER_SERVER, release), "heritage": "jupyterhub",
                  "hub.jupyter.org/username": user, "hub.jupyter.org/servername": "", **single["extraLabels"],
                  self.label: scenario}
        ns = spawner["namespace"]
        claim = f"claim-{user}"
        pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": claim, "namespace": ns, "labels": {"app": "jupyterhub", "component": "singleuser-storage",
                                                                      "hub.jupyter.org/username": user, self.label: scenario},
                            "annotations": {"hub.jupyter.org/username": user}},
               "spec": {"accessModes": ACCESS_MODES, "resources": {"requests": {"storage": CAPACITY}},
                        "storageClassName": single["storage"]["dynamic"]["storageClass"]}}
        requests = {"cpu": str(o["cpu_guarantee"]), "memory": _bytes(o["mem_guarantee"])}
        limits = {"cpu": str(o["cpu_limit"]), "memory": _bytes(o["mem_limit"]), **o.get("extra_resource_limits", {})}
        tag = chart_pin(jupyterhub.JupyterHub.name).version
        container = {"name": "notebook", "image": f"{IMAGE}:{tag}", "args": ["jupyterhub-singleuser"],
                     "ports": [{"name": "notebook-port", "containerPort": jupyterhub.SERVER_PORT}],
                     "env": [{"name": k, "value": v} for k, v in sorted(spawner.get("environment", {}).items())],
                     **spawner.get("extra_container_config", {}),
                     "resources": {"requests": requests, "limits": limits},
                     "securityContext": {"runAsUser": UID, "allowPrivilegeEscalation": False},
                     "volumeMounts": [{"name": f"volume-{user}", "mountPath": HOME_MOUNT}]}
        spec: dict[str, Any] = {
            "automountServiceAccountToken": False, "enableServiceLinks": False, "restartPolicy": "OnFailure",
            "securityContext": {"fsGroup": FS_GID}, "priorityClassName": spawner["priority_class_name"],
            "containers": [container], "tolerations": [*USER_POD_TOLERATIONS, *single.get("extraTolerations", [])],
            "volumes": [{"name": f"volume-{user}", "persistentVolumeClaim": {"claimName": claim}}]}
        if (single.get("cloudMetadata") or {}).get("blockWithIptables", True):  # the chart's default
            spec["initContainers"] = [{"name": "block-cloud-metadata", "image": f"{NETWORK_TOOLS}:{tag}",
                                       "command": ["iptables", "--append", "OUTPUT", "--protocol", "tcp", "--destination",
                                                   "169.254.169.254", "--destination-port", "80", "--jump", "DROP"],
                                       "securityContext": {"privileged": True, "runAsUser": 0, "capabilities": {"add": ["NET_ADMIN"]}}}]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"jupyter-{user}", "namespace": ns, "labels": labels,
                                                               "annotations": {"hub.jupyter.org/username": user}}, "spec": spec}
        return pvc, pod

    def spawn(self, project: str, user: str, profile: str, scenario: str) -> dict[str, Any]:
        """Create the home (once) and the server, as the hub; returns the Pod."""
        pvc, pod = self.objects(project, user, profile, scenario)
        self._storage_class(pvc["spec"]["storageClassName"])
        self.namespaces.add(pvc["metadata"]["namespace"])
        as_hub = self.hub_kube(project)
        try:
            if self.kube.get("v1", "PersistentVolumeClaim", pvc["metadata"]["name"], pvc["metadata"]["namespace"]) is None:
                as_hub.create(pvc)
            return as_hub.create(pod)
        finally:
            as_hub.close()

    # ---- the homes' provisioner (box-only) ------------------------------------------------------

    def _storage_class(self, name: str) -> None:
        if self.kube.get("storage.k8s.io/v1", "StorageClass", name) is not None:
            return
        local = name in jupyterhub.NODE_LOCAL_CLASSES
        self.kube.create({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": name, "labels": {self.label: "homes"}},
                          "provisioner": LOCAL_PROVISIONER if local else NETWORK_PROVISIONER, "reclaimPolicy": "Retain",
                          "volumeBindingMode": "WaitForFirstConsumer" if local else "Immediate"})

    def provision(self) -> None:
        """Make a volume for every home claim of ours still unbound: at once for a network class,
        on the scheduler's node (pinned to it) for a node-local one."""
        for ns in sorted(self.namespaces):
            for pvc in self.kube.list("v1", "PersistentVolumeClaim", ns, selector=self.label):
                if (pvc.get("spec") or {}).get("volumeName"):
                    continue
                cls = pvc["spec"].get("storageClassName")
                node = (pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE)
                local = cls in jupyterhub.NODE_LOCAL_CLASSES
                if local and not node:
                    continue  # waits for its first consumer
                self._volume(pvc, cls, node if local else None)

    def _volume(self, pvc: dict[str, Any], cls: str, node: str | None) -> None:
        name = f"pvc-{pvc['metadata']['uid']}"
        if self.kube.get("v1", "PersistentVolume", name) is not None:
            return
        meta = pvc["metadata"]
        spec: dict[str, Any] = {
            "capacity": {"storage": pvc["spec"]["resources"]["requests"]["storage"]}, "accessModes": pvc["spec"]["accessModes"],
            "storageClassName": cls, "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": meta["namespace"],
                         "name": meta["name"], "uid": meta["uid"]}}
        if node:  # local-path-provisioner: a folder on that node, and the volume pinned to it
            spec["hostPath"] = {"path": f"/opt/local-path-provisioner/{name}", "type": "DirectoryOrCreate"}
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
        else:
            spec["nfs"] = {"server": "homes.twin.invalid", "path": f"/homes/{name}"}
        self.kube.create({"apiVersion": "v1", "kind": "PersistentVolume",
                          "metadata": {"name": name, "labels": {self.label: meta["labels"].get(self.label, "")}}, "spec": spec})

    def clean(self, scenario: str) -> None:
        """The volumes the box made for the scenario's homes (their claims go with its objects)."""
        for pv in self.kube.list("v1", "PersistentVolume", selector=f"{self.label}={scenario}"):
            self.kube.delete("v1", "PersistentVolume", pv["metadata"]["name"])
        self.namespaces = set()
