"""The controllers forge deploys that run in the box for real: Kueue and the training-operator,
as processes of the versions charts/versions.yaml pins, fed forge's own configuration.

Kueue runs with the Configuration forge writes (the `kueue-manager-config` the chart renders from
forge's values), changed only where a process outside a pod must differ: it listens on 127.0.0.1
on free ports (health, metrics, webhooks, visibility), and elects no leader (one replica). Its
internal certificate management stays on, as deployed: it issues the webhook certificate for
`kueue-webhook-service.kueue-system.svc`, writes it to the chart's Secret and injects the CA into
the webhook configurations and the CRDs' conversion webhooks. The API server reaches it through
that same Service, made an ExternalName of 127.0.0.1 with the box's port: the chart's Service and
webhook configurations (from the hydrated chart, else rendered from the chart inside Kueue's Go
module with forge's values) are re-pointed to it, and listed as replaced.

The training-operator (v1 controller of PyTorchJob and MPIJob) serves its webhooks on every
interface, so it runs in a network namespace of its own (forge.twin.jail); its webhooks are not
registered in the box (it only validates), and its controllers create the jobs' pods and Services.
"""
from __future__ import annotations

import base64
import copy
import threading
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from forge.components.kueue import NAMESPACE as KUEUE_NAMESPACE
from forge.components.kueue import WEBHOOK_SECRET as KUEUE_WEBHOOK_SECRET
from forge.components.training_operator import NAMESPACE as TO_NAMESPACE
from forge.errors import ForgeError
from forge.tools import helm_command, kustomize_build_command
from forge.twin.controlplane import kubeconfig_text
from forge.twin.jail import TcpToUnix, UnixToTcp
from forge.twin.kube import ApiError, Kube
from forge.twin.pki import Pki
from forge.twin.processes import Process, free_ports, start, wait_until
from forge.twin.sources import Application
from forge.twin.sync import WEBHOOK_KINDS, Wiring

KUEUE_WEBHOOK_SERVICE = "kueue-webhook-service"  # the chart's (fullname-webhook-service)
KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
READY_TIMEOUT = 180.0
# The training-operator's own names and ports (manifests/base at its tag, and its flags' defaults).
TO_SERVICE = "training-operator"
TO_SECRET = "training-operator-webhook-cert"
TO_WEBHOOK_CONFIG = "validator.training-operator.kubeflow.org"
TO_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"  # fixed in its code; a tmpfs of the jail's own
TO_WEBHOOK_PORT, TO_HEALTH_PORT = 9443, 8081


def kueue_manager_config(app: Application, values_file: Path) -> dict[str, Any]:
    """forge's Kueue Configuration: the hydrated chart's ConfigMap, else forge's values."""
    for item in app.items:
        o = item.obj
        if o.get("kind") == "ConfigMap" and (o.get("metadata") or {}).get("name") == "kueue-manager-config":
            return yaml.safe_load(o["data"][KUEUE_CONFIG_KEY])
    values = yaml.safe_load(values_file.read_text(encoding="utf-8"))
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


def kueue_webhook_objects(root: Path, app: Application, values_file: Path, chart: Path) -> list[dict[str, Any]]:
    """Kueue's webhook configurations and their certificate Secret, as its chart renders them."""
    wanted = (*WEBHOOK_KINDS, "Secret")
    if app.hydrated:
        return [copy.deepcopy(i.obj) for i in app.items if i.obj.get("kind") in wanted
                and str((i.obj.get("metadata") or {}).get("name", "")).startswith("kueue-")]
    cmd = [*helm_command(root), "template", "kueue", str(chart), "--namespace", KUEUE_NAMESPACE, "-f", str(values_file),
           "--show-only", "templates/webhook/manifests.yaml", "--show-only", "templates/internalcert/secret.yaml"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise ForgeError(f"twin: rendering Kueue's webhooks failed: {done.stderr.strip()[-600:]}")
    return [o for o in yaml.safe_load_all(done.stdout) if o and o.get("kind") in wanted]


def training_operator_objects(app: Application, manifests: Path, root: Path) -> list[dict[str, Any]]:
    """The training-operator's webhook configuration and certificate Secret, from the remote base
    forge deploys: the hydrated Application, else its standalone overlay at the tag (kept from the
    Go module at build time), built with kustomize."""
    wanted = {("ValidatingWebhookConfiguration", TO_WEBHOOK_CONFIG), ("Secret", TO_SECRET)}
    if app.hydrated:
        return [copy.deepcopy(i.obj) for i in app.items if (i.obj.get("kind"), (i.obj.get("metadata") or {}).get("name")) in wanted]
    done = subprocess.run([*kustomize_build_command(root), str(manifests / "overlays" / "standalone")],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise ForgeError(f"twin: building the training-operator's manifests failed: {done.stderr.strip()[-600:]}")
    return [o for o in yaml.safe_load_all(done.stdout) if o and (o.get("kind"), o["metadata"].get("name")) in wanted]


class SecretVolume:
    """The kubelet's part for Kueue's webhook certificate: Kueue's cert rotator writes the Secret,
    and waits for its files to appear where the Deployment mounts the Secret (webhook.certDir).
    The box copies the Secret's keys there, and again whenever it changes, as the kubelet does."""

    def __init__(self, kube: Kube, namespace: str, name: str, folder: Path) -> None:
        self.kube, self.namespace, self.name, self.folder = kube, namespace, name, folder
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        seen: dict[str, str] = {}
        while not self.stop.wait(0.3):
            try:
                secret = self.kube.get("v1", "Secret", self.name, self.namespace)
            except (OSError, ApiError):
                continue
            data = (secret or {}).get("data") or {}
            for key, value in data.items():
                if seen.get(key) != value:
                    tmp = self.folder / f".{key}.tmp"
                    tmp.write_bytes(base64.b64decode(value))
                    tmp.replace(self.folder / key)
                    seen[key] = value

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.kube.close()


class Controllers:
    def __init__(self, root: Path, state: Path, binaries: dict[str, Path], pki: Pki, server_port: int) -> None:
        self.root, self.state, self.bin, self.pki, self.server_port = root, state, binaries, pki, server_port
        self.procs: list[Process] = []
        self.relays: list[TcpToUnix | UnixToTcp] = []
        self.to_ports = tuple(free_ports(2))  # the training-operator's webhook and health, as the box reaches them
        # Chosen now: the CRDs applied before Kueue starts name its webhook port already.
        self.kueue_ports = dict(zip(("health", "metrics", "webhook", "visibility"), free_ports(4)))
        self.kueue_webhook_port = self.kueue_ports["webhook"]
        self.volumes: list[SecretVolume] = []

    # ---- Kueue -------------------------------------------------------------------------------------

    def start_kueue(self, kube: Kube, app: Application, values_file: Path) -> None:
        health, metrics, webhook, visibility = (self.kueue_ports[k] for k in ("health", "metrics", "webhook", "visibility"))
        config = kueue_manager_config(app, values_file)
        certs = self.state / "kueue-certs"
        certs.mkdir(parents=True, exist_ok=True)
        config |= {"health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
                   "metrics": {**(config.get("metrics") or {}), "bindAddress": f"127.0.0.1:{metrics}"},
                   "webhook": {"port": webhook, "host": "127.0.0.1", "certDir": str(certs)},
                   "leaderElection": {"leaderElect": False},
                   "visibilityServer": {"bindAddress": "127.0.0.1", "bindPort": visibility}}
        # The visibility API (pending workloads) stays off: its APIService is set aside (nothing
        # would call it), and its server writes certificates to /visibility, outside the box.
        config_file = self.state / "kueue-config.yaml"
        config_file.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        service = {"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": KUEUE_WEBHOOK_SERVICE, "namespace": KUEUE_NAMESPACE},
                   "spec": {"type": "ExternalName", "externalName": "127.0.0.1",
                            "ports": [{"name": "https", "port": webhook, "targetPort": webhook}]}}
        kube.apply(service, manager="forge-twin")
        chart = self.bin["kueue"].parent / "data" / "charts" / "kueue"  # from Kueue's Go module (forge.twin.binaries)
        for obj in kueue_webhook_objects(self.root, app, values_file, chart):
            for hook in obj.get("webhooks") or []:
                svc = (hook.get("clientConfig") or {}).get("service")
                if svc and svc.get("name") == KUEUE_WEBHOOK_SERVICE:
                    svc["port"] = webhook
            kube.apply(obj, manager="forge-twin")
        secret = (config.get("internalCertManagement") or {}).get("webhookSecretName") or KUEUE_WEBHOOK_SECRET
        volume = SecretVolume(Kube(kube.server, self.pki.token(), self.pki.ca), KUEUE_NAMESPACE, secret, certs)
        volume.start()
        self.volumes.append(volume)
        proc = start("kueue", [str(self.bin["kueue"]), "--config", str(config_file), "--kubeconfig",
                               str(self.state / "kubeconfig"), "--feature-gates", "VisibilityOnDemand=false"],
                     self.state / "logs")
        self.procs.append(proc)
        wait_until(lambda: _http_ok(f"http://127.0.0.1:{health}/readyz"), proc, "ready", READY_TIMEOUT)
        wait_until(lambda: _ca_injected(kube), proc, "serving its webhooks (CA bundle injected)", READY_TIMEOUT)

    def wiring(self, karpenter: bool = False) -> Wiring:
        return self.wiring_for(self.kueue_webhook_port, karpenter)

    @staticmethod
    def wiring_for(kueue_webhook_port: int, karpenter: bool = False) -> Wiring:
        """How forge's objects meet this box's controllers (see the module's docstring)."""
        replaced = {("Service", KUEUE_NAMESPACE, KUEUE_WEBHOOK_SERVICE): "the box's ExternalName to its Kueue process",
                    ("Service", TO_NAMESPACE, TO_SERVICE): "the box's ExternalName to its training-operator process",
                    ("ValidatingWebhookConfiguration", "", TO_WEBHOOK_CONFIG): "wired to the box's training-operator process"}
        replaced |= {(k, "", f"kueue-{n}"): "wired to the box's Kueue process"
                     for k, n in (("MutatingWebhookConfiguration", "mutating-webhook-configuration"),
                                  ("ValidatingWebhookConfiguration", "validating-webhook-configuration"))}
        return Wiring({(KUEUE_NAMESPACE, KUEUE_WEBHOOK_SERVICE): kueue_webhook_port}, replaced, karpenter)

    # ---- training-operator ------------------------------------------------------------------------

    def start_training_operator(self, kube: Kube, app: Application, namespace: str) -> None:
        """In its jail, with its webhook and health reachable from the box through relays."""
        unshare = shutil.which("unshare")
        if unshare is None:
            raise ForgeError("twin: the training-operator runs in its own network namespace and needs `unshare` "
                             "(util-linux): install it")
        webhook, health = self.to_ports
        socks = {name: self._socket(name) for name in ("api", "webhook", "health")}
        self.relays.append(UnixToTcp(socks["api"], self.server_port))
        self.relays += [TcpToUnix(webhook, socks["webhook"]), TcpToUnix(health, socks["health"])]
        for relay in self.relays:
            relay.serve_in_background()
        for obj in training_operator_objects(app, self.bin["training-operator.v1"].parent / "data" / "manifests", self.root):
            if obj["kind"] == "ValidatingWebhookConfiguration":
                for hook in obj.get("webhooks") or []:
                    hook["clientConfig"]["service"]["port"] = webhook
            kube.apply(obj, manager="forge-twin")
        kube.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": TO_SERVICE, "namespace": namespace},
                    "spec": {"type": "ExternalName", "externalName": "127.0.0.1",
                             "ports": [{"name": "webhook-server", "port": webhook, "targetPort": webhook}]}},
                   manager="forge-twin")
        jailed = self.state / "kubeconfig-jail"
        jailed.write_text(kubeconfig_text(f"https://127.0.0.1:{self.server_port}", self.pki), encoding="utf-8")
        token = self.pki.folder / "token"
        token.write_text(self.pki.token(), encoding="utf-8")
        cmd = [unshare, "--net", "--mount", "--", sys.executable, "-m", "forge.twin.jail",
               "--reach", f"{socks['api']}:{self.server_port}", "--expose", f"{TO_WEBHOOK_PORT}:{socks['webhook']}",
               "--expose", f"{TO_HEALTH_PORT}:{socks['health']}",
               "--secret", f"{namespace}/{TO_SECRET}:{TO_CERT_DIR}", "--api", f"https://127.0.0.1:{self.server_port}",
               "--token-file", str(token), "--ca", str(self.pki.ca), "--",
               str(self.bin["training-operator.v1"]), "--metrics-bind-address", "127.0.0.1:8080",
               "--health-probe-bind-address", f"127.0.0.1:{TO_HEALTH_PORT}", "--webhook-server-port", str(TO_WEBHOOK_PORT),
               "--controller-threads", "4", "--kube-api-qps", "100", "--kube-api-burst", "200"]
        proc = start("training-operator", cmd, self.state / "logs",
                     env={**os.environ, "KUBECONFIG": str(jailed), "MY_POD_NAMESPACE": namespace})
        self.procs.append(proc)
        wait_until(lambda: _http_ok(f"http://127.0.0.1:{health}/readyz"), proc, "ready (certificates in place)", READY_TIMEOUT)

    def _socket(self, name: str) -> str:
        path = self.state / f"{name}.sock"
        if len(str(path)) > 100:  # AF_UNIX paths are limited to 108 bytes
            path = Path(tempfile.mkdtemp(prefix="forge-twin-")) / f"{name}.sock"
        return str(path)

    def close(self) -> None:
        for volume in self.volumes:
            volume.close()
        for relay in self.relays:
            relay.shutdown()
            relay.server_close()
            if isinstance(relay, UnixToTcp):
                Path(relay.server_address).unlink(missing_ok=True)  # type: ignore[arg-type]
        self.relays = []


def _http_ok(url: str) -> bool:
    import urllib.request
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status == 200


def _ca_injected(kube: Kube) -> bool:
    for kind in WEBHOOK_KINDS:
        for obj in kube.list("admissionregistration.k8s.io/v1", kind):
            if str(obj["metadata"]["name"]).startswith("kueue-"):
                if any(not (h.get("clientConfig") or {}).get("caBundle") for h in obj.get("webhooks") or []):
                    return False
    time.sleep(0.5)  # the Secret's certificate reaches the webhook server's files
    return True
