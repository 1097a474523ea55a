"""Argo CD's components out of the cluster, against the box's API server: one binary
(ci/tools.json twin.argocd-box) started under each component's name, which is how it chooses
what to be. TLS is off between them (loopback only); the API server listens on 127.0.0.1 only."""
from __future__ import annotations

from pathlib import Path

from forge.twin.processes import Process, free_ports, start, wait_until
from forge.twin.argocd.served import _answers

NAMESPACE = "argocd"
COMPONENTS = ("argocd-repo-server", "argocd-application-controller", "argocd-server")


def link_names(binary: Path, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    links = {}
    for name in (*COMPONENTS, "argocd-applicationset-controller"):
        link = folder / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(binary)
        links[name] = link
    return links


def start_components(links: dict[str, Path], kubeconfig: Path, redis_port: int, logs: Path,
                     proxy_port: int) -> tuple[list[Process], int]:
    repo, api, m1, m2, m3 = free_ports(5)
    common = ["--redis", f"127.0.0.1:{redis_port}", "--loglevel", "info"]
    out = ["--kubeconfig", str(kubeconfig), "--namespace", NAMESPACE]
    # No GnuPG (the box verifies no commit signatures) and no /app paths of the container image.
    (logs / "tmp").mkdir(parents=True, exist_ok=True)
    env = {"ARGOCD_EXEC_TIMEOUT": "180s", "HOME": str(logs), "PATH": _path(), "ARGOCD_GPG_ENABLED": "false",
           "TMPDIR": str(logs / "tmp"), "ARGOCD_PLUGINSOCKFILEPATH": str(logs / "tmp"),
           "HTTPS_PROXY": f"http://127.0.0.1:{proxy_port}", "NO_PROXY": "127.0.0.1,localhost"}
    procs = [start("argocd-repo-server", [str(links["argocd-repo-server"]), "--disable-tls", "--client-ca-path", "",
                                          "--address", "127.0.0.1", "--metrics-address", "127.0.0.1",
                                          "--port", str(repo), "--metrics-port", str(m1), *common], logs, env)]
    wait_until(lambda: _answers(repo), procs[0], "serving", 60)
    procs.append(start("argocd-application-controller", [
        str(links["argocd-application-controller"]), *out, *common, "--repo-server", f"127.0.0.1:{repo}",
        "--repo-server-plaintext", "--metrics-port", str(m2), "--app-resync", "20",
        "--status-processors", "4", "--operation-processors", "4"], logs, env))
    procs.append(start("argocd-server", [str(links["argocd-server"]), *out, *common, "--insecure",
                                         "--address", "127.0.0.1", "--port", str(api), "--metrics-address", "127.0.0.1",
                                         "--metrics-port", str(m3), "--repo-server", f"127.0.0.1:{repo}",
                                         "--repo-server-plaintext"], logs, env))
    return procs, api


def _path() -> str:
    import os
    return os.environ.get("PATH", "/usr/bin:/bin")
