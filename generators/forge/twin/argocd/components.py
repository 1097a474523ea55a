"""Argo CD's components out of the cluster, against the box's API server: one binary
(ci/tools.json twin.argocd-box) started under each component's name, which is how it chooses
what to be. TLS is off between them (loopback only); the API server listens on 127.0.0.1 only.

Out of the cluster, Argo CD's destination `https://kubernetes.default.svc` (the one forge's
Applications name) would load the in-cluster configuration (KUBERNETES_SERVICE_HOST/PORT and a pod's
service-account token), and any cluster Secret for that URL too. ARGOCD_FAKE_IN_CLUSTER=true makes
Argo CD build that destination's configuration from KUBECONFIG instead (v3.6.2:
pkg/apis/application/v1alpha1/cluster_constants.go, read in types.go Cluster.RawRestConfig, the
fake in-cluster config of Argo CD's own local development): the box's kubeconfig. Box-only."""
from __future__ import annotations

import shutil
from pathlib import Path

from forge.twin.processes import Process, free_ports, start, wait_until
from forge.twin.argocd.served import _answers

NAMESPACE = "argocd"
COMPONENTS = ("argocd-repo-server", "argocd-application-controller", "argocd-server")
# The scripts of the module's hack/ (ci/tools.json keep) the image installs in /usr/local/bin and the
# repo server runs by name: v3.6.2 runs git-verify-wrapper.sh on every manifest generation, GnuPG
# off or not (reposerver/repository/repository.go), and fails the generation with "permission denied"
# without it.
SCRIPTS = ("git-verify-wrapper.sh",)


def link_names(binary: Path, folder: Path, kustomize: Path | None = None) -> dict[str, Path]:
    """`folder` (first on the components' PATH): links to the binary under each component's name,
    the module's scripts, copied executable (Go's module cache keeps no mode bits), and the
    standalone kustomize (ci/tools.json twin.kustomize-box), which the repo server runs by name for
    an Application's kustomize options (`kustomize edit add label`), where the PATH's kustomize may
    be tools/bin's kubectl shim (build and version only)."""
    folder.mkdir(parents=True, exist_ok=True)
    links = {}
    for name in (*COMPONENTS, "argocd-applicationset-controller", *SCRIPTS, *(("kustomize",) if kustomize else ())):
        link = folder / name
        if link.is_symlink() or link.exists():
            link.unlink()
        if name in SCRIPTS:
            shutil.copyfile(binary.parent / "data" / "hack" / name, link)
            link.chmod(0o755)
        else:
            link.symlink_to(kustomize if name == "kustomize" else binary)
        links[name] = link
    return links


def start_components(links: dict[str, Path], kubeconfig: Path, redis_port: int, logs: Path) -> tuple[list[Process], int]:
    repo, api, m1, m2, m3 = free_ports(5)
    common = ["--redis", f"127.0.0.1:{redis_port}", "--loglevel", "info"]
    out = ["--kubeconfig", str(kubeconfig), "--namespace", NAMESPACE]
    # No GnuPG (the box verifies no commit signatures) and no /app paths of the container image.
    (logs / "tmp").mkdir(parents=True, exist_ok=True)
    path = f"{links['argocd-repo-server'].parent}:{_path()}"
    env = {"ARGOCD_EXEC_TIMEOUT": "180s", "HOME": str(logs), "PATH": path, "ARGOCD_GPG_ENABLED": "false",
           "TMPDIR": str(logs / "tmp"), "ARGOCD_PLUGINSOCKFILEPATH": str(logs / "tmp"),
           **in_cluster_env(kubeconfig)}
    procs = [start("argocd-repo-server", [str(links["argocd-repo-server"]), "--disable-tls", "--client-ca-path", "",
                                          "--address", "127.0.0.1", "--metrics-address", "127.0.0.1",
                                          "--port", str(repo), "--metrics-port", str(m1), *common], logs, env)]
    wait_until(lambda: _answers(repo), procs[0], "serving", 60)
    procs.append(start("argocd-application-controller", [
        str(links["argocd-application-controller"]), *out, *common, "--repo-server", f"127.0.0.1:{repo}",
        "--repo-server-plaintext", "--metrics-port", str(m2), "--app-resync", "20",
        # Each resource's health in the Application's status (v3 keeps it only in the resource tree in
        # Redis): the box's report of an Application that is not Healthy names the resource and Argo
        # CD's message for it (forge.twin.argocd.bootstrap.reason). A controller setting, not deployed.
        "--persist-resource-health",
        "--status-processors", "4", "--operation-processors", "4"], logs, env))
    procs.append(start("argocd-server", [str(links["argocd-server"]), *out, *common, "--insecure",
                                         "--address", "127.0.0.1", "--port", str(api), "--metrics-address", "127.0.0.1",
                                         "--metrics-port", str(m3), "--repo-server", f"127.0.0.1:{repo}",
                                         "--repo-server-plaintext"], logs, env))
    return procs, api


def in_cluster_env(kubeconfig: Path) -> dict[str, str]:
    """`https://kubernetes.default.svc` is the box's API server, as the box's kubeconfig names it."""
    return {"ARGOCD_FAKE_IN_CLUSTER": "true", "KUBECONFIG": str(kubeconfig)}


def _path() -> str:
    import os
    return os.environ.get("PATH", "/usr/bin:/bin")
