"""The control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and kwok
playing the kubelets. Each on 127.0.0.1, on free ports; one admin kubeconfig for them all."""
from __future__ import annotations

import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from forge.facts.kube_apis import Served
from forge.twin.pki import Pki
from forge.twin.processes import Process, free_ports, start, wait_until

SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"  # kwok gives pods addresses from here
# The box's own stage: a running pod a Job owns that carries FAIL_LABEL fails (exit code 1) instead
# of completing, as a node test on bad hardware would (forge.twin.driver_rollout). Its weight wins
# over pod-complete's (none) whenever both match: kwok draws among matching stages by weight.
FAIL_LABEL = "twin.forge.exa.ai/fail"
POD_FAIL_STAGE = f"""
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: forge-pod-fail
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  weight: 1
  selector:
    matchExpressions:
    - {{key: '.metadata.deletionTimestamp', operator: DoesNotExist}}
    - {{key: '.status.phase', operator: In, values: [Running]}}
    - {{key: '.metadata.ownerReferences.[].kind', operator: In, values: [Job]}}
    - {{key: '.metadata.labels["{FAIL_LABEL}"]', operator: Exists}}
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      containerStatuses:
      {{{{ range $index, $item := .spec.containers }}}}
      - image: {{{{ $item.image | Quote }}}}
        name: {{{{ $item.name | Quote }}}}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 1
            finishedAt: {{{{ $now | Quote }}}}
            reason: Error
            startedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      phase: Failed
"""
# The node label and annotation kwok manages nodes by: only the box's own nodes.
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
READY_TIMEOUT = 120.0


@dataclass(frozen=True)
class Ports:
    etcd: int
    etcd_peer: int
    apiserver: int
    scheduler: int
    controller_manager: int
    kwok: int

    @classmethod
    def pick(cls) -> "Ports":
        return cls(*free_ports(6))


def kubeconfig_text(server: str, pki: Pki) -> str:
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: twin\n  cluster:\n    server: {server}\n    certificate-authority: {pki.ca}\n"
        f"users:\n- name: admin\n  user:\n    token: {pki.token()}\n"
        "contexts:\n- name: twin\n  context:\n    cluster: twin\n    user: admin\n"
        "current-context: twin\n"
    )


def _https_ok(url: str, pki: Pki, token: bool = True) -> bool:
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.check_hostname = False  # scheduler and controller manager serve self-signed certificates
    context.verify_mode = ssl.CERT_NONE if not token else ssl.CERT_REQUIRED
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {pki.token()}"} if token else {})
    with urllib.request.urlopen(request, context=context, timeout=5) as resp:
        return resp.status == 200


def _http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status == 200


class ControlPlane:
    def __init__(self, state: Path, binaries: dict[str, Path], pki: Pki, ports: Ports, etcd_data: Path,
                 served: Served | None = None) -> None:
        self.state, self.bin, self.pki, self.ports, self.etcd_data = state, binaries, pki, ports, etcd_data
        self.served = served or Served("1.34")  # no flags: the upstream defaults
        self.logs = state / "logs"
        self.kubeconfig = state / "kubeconfig"
        self.procs: list[Process] = []

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"

    def _start(self, name: str, args: list[str]) -> Process:
        proc = start(name, [str(self.bin[name]), *args], self.logs)
        self.procs.append(proc)
        return proc

    def start_api(self) -> None:
        p, pki = self.ports, self.pki
        etcd_url = f"http://127.0.0.1:{p.etcd}"
        etcd = self._start("etcd", [
            "--name", "twin", "--data-dir", str(self.etcd_data), "--log-level", "warn",
            "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
            "--listen-peer-urls", f"http://127.0.0.1:{p.etcd_peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{p.etcd_peer}",
            "--initial-cluster", f"twin=http://127.0.0.1:{p.etcd_peer}"])
        wait_until(lambda: _http_ok(f"{etcd_url}/health"), etcd, "healthy", READY_TIMEOUT)
        api = self._start("kube-apiserver", [
            "--etcd-servers", etcd_url, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(p.apiserver), "--tls-cert-file", str(pki.serving_cert),
            "--tls-private-key-file", str(pki.serving_key), "--token-auth-file", str(pki.tokens),
            "--authorization-mode", "RBAC", "--allow-privileged=true",  # as kubeadm sets it
            "--service-account-key-file", str(pki.sa_pub), "--service-account-signing-key-file", str(pki.sa_key),
            "--service-account-issuer", "https://kubernetes.default.svc", "--service-cluster-ip-range", SERVICE_CIDR,
            "--profiling=false", "--max-requests-inflight", "800", "--max-mutating-requests-inflight", "400",
            # Exactly what the cluster's API server serves (its inventory's cluster.api_server;
            # none on EKS), never more: an object of another API is refused here as it would be there.
            *self.served.flags()])
        wait_until(lambda: _https_ok(f"{self.server}/readyz", pki), api, "ready", READY_TIMEOUT)
        self.kubeconfig.write_text(kubeconfig_text(self.server, pki), encoding="utf-8")
        self.kubeconfig.chmod(0o600)

    def _kwok_config(self) -> Path:
        """kwok's stages, as kwokctl gives them (its module's kustomize/stage, kept at build time):
        a node turns Ready and renews its lease; a bound pod turns Running and Ready; a pod a Job
        owns completes; a deleted pod goes."""
        data = self.bin["kwok"].parent / "data" / "kustomize" / "stage"
        files = [data / "node/fast/node-initialize.yaml", data / "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
                 *(data / "pod/fast" / f"pod-{s}.yaml" for s in ("ready", "complete", "delete"))]
        config = self.state / "kwok.yaml"
        stages = [f.read_text(encoding="utf-8").strip() for f in files] + [POD_FAIL_STAGE.strip()]
        config.write_text("\n---\n".join(stages) + "\n", encoding="utf-8")
        return config

    def start_controllers(self) -> None:
        """The controller manager (Jobs, ReplicaSets, DaemonSets, the garbage collector, service
        accounts...), the scheduler and kwok. The node lifecycle controller stays on: kwok renews
        the nodes' leases, so a node is NotReady only if kwok stops, as a dead kubelet's would be."""
        p, kc = self.ports, str(self.kubeconfig)
        auth = ["--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
                "--bind-address", "127.0.0.1", "--leader-elect=false"]
        kcm = self._start("kube-controller-manager", [
            *auth, "--secure-port", str(p.controller_manager), "--service-account-private-key-file", str(self.pki.sa_key),
            "--root-ca-file", str(self.pki.ca), "--use-service-account-credentials=false",
            "--controllers", "*,-cloud-node-lifecycle-controller,-service-lb-controller,-node-route-controller",
            "--concurrent-job-syncs", "20",
            # kwok renews every node's lease from one process; on a loaded two-core machine a
            # renewal can lag the default 50 s, and a node marked NotReady would evict its pods.
            "--node-monitor-grace-period", "5m"])
        sched = self._start("kube-scheduler", [*auth, "--secure-port", str(p.scheduler)])
        kwok = self._start("kwok", [
            "--kubeconfig", kc, "--config", str(self._kwok_config()), "--manage-all-nodes=false",
            "--node-lease-duration-seconds", "40",
            "--manage-nodes-with-annotation-selector", f"{KWOK_ANNOTATION}=fake",
            "--cidr", POD_CIDR, "--node-ip", "127.0.0.1", "--server-address", f"127.0.0.1:{p.kwok}"])
        for proc, port in ((kcm, p.controller_manager), (sched, p.scheduler)):
            wait_until(lambda port=port: _https_ok(f"https://127.0.0.1:{port}/healthz", self.pki, token=False),
                       proc, "healthy", READY_TIMEOUT)
        wait_until(lambda: _http_ok(f"http://127.0.0.1:{p.kwok}/healthz"), kwok, "healthy", READY_TIMEOUT)
