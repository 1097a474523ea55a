"""The root Application's PreSync check: what must exist on a cluster before its first sync, one
line per missing prerequisite, exit 1 when any is missing (the sync fails and is retried).

Standard library only: forge.argocd_prereqs ships this file as it is in a ConfigMap, with the
cluster's list of prerequisites (JSON), and runs it in a Job with the Python image pinned in
charts/versions.yaml. It reads the API server as the Job's service account (in-cluster token and
CA), or `--api URL` without credentials (tests, a `kubectl proxy` on 127.0.0.1).

The prerequisites (keys of the JSON):
- `cni`: DaemonSet names of CNIs that enforce NetworkPolicy (Calico, Cilium, ...): at least one
  must run, else forge's default-deny NetworkPolicies fence nothing;
- `eks_vpc_cni` (an EKS cluster): the VPC CNI `aws-node` counts when its network policy agent
  enforces NetworkPolicy;
- `storage_classes`: every StorageClass forge's components claim volumes of;
- `ingress_classes`: every IngressClass forge's Ingresses name (the ingress controller);
- `secrets`: the bootstrap Secret(s), namespace, name and the keys they must have;
- `apis`: every built-in API group/version forge's objects for the cluster use, with their kinds
  (forge.argocd_prereqs derives it from those objects): the API server must serve each kind, or
  the first wave that carries one fails and no later wave syncs.
"""
from __future__ import annotations

import argparse
import json
import ssl
import sys
import urllib.error
import urllib.request
from typing import Any, Callable

IN_CLUSTER = "https://kubernetes.default.svc"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

Get = Callable[[str], "dict[str, Any] | None"]
VPC_CNI, VPC_CNI_AGENT = "aws-node", "aws-eks-nodeagent"  # the EKS VPC CNI's DaemonSet and its network policy agent
VPC_CNI_NAMESPACE = "kube-system"  # where the vpc-cni add-on runs it


def missing(spec: dict[str, Any], get: Get) -> list[str]:
    """One line per missing prerequisite; [] when everything is there."""
    out = _cni(spec, get)
    for name in spec.get("storage_classes") or []:
        if get(f"/apis/storage.k8s.io/v1/storageclasses/{name}") is None:
            out.append(f"missing prerequisite: StorageClass {name} (the components claim their volumes from it): "
                       "create it, or set cluster.storage_class in the inventory to one that exists")
    for name in spec.get("ingress_classes") or []:
        if get(f"/apis/networking.k8s.io/v1/ingressclasses/{name}") is None:
            out.append(f"missing prerequisite: IngressClass {name} (the ingress controller forge's Ingresses use): "
                       "install the ingress controller that provides it")
    out += missing_apis(spec.get("apis") or {}, get)
    for secret in spec.get("secrets") or []:
        ns, name, keys = secret["namespace"], secret["name"], secret.get("keys") or []
        found = get(f"/api/v1/namespaces/{ns}/secrets/{name}")
        if found is None:
            out.append(f"missing prerequisite: Secret {ns}/{name} (the bootstrap credential, keys {', '.join(keys)}): "
                       "create it by hand (docs/bootstrap.md)")
            continue
        lacking = [k for k in keys if not (found.get("data") or {}).get(k)]
        if lacking:
            out.append(f"missing prerequisite: Secret {ns}/{name} has no key {', '.join(lacking)}: add it (docs/bootstrap.md)")
    return out


def missing_apis(apis: dict[str, list[str]], get: Get) -> list[str]:
    """One line per group/version the API server does not serve, or serves without some kinds
    (a beta kind behind a feature gate): discovery, which every authenticated account may read."""
    out = []
    for group_version, kinds in sorted(apis.items()):
        listing = get("/api/v1" if group_version == "v1" else f"/apis/{group_version}")
        served = {r.get("kind") for r in (listing or {}).get("resources", [])}
        lacking = [k for k in kinds if k not in served]
        if listing is None:
            out.append(f"missing prerequisite: API {group_version} (forge's objects use it: {', '.join(kinds)}): the API "
                       "server does not serve it; turn it on (--runtime-config, docs/bootstrap.md) or state in "
                       "cluster.api_server what the cluster serves and regenerate")
        elif lacking:
            out.append(f"missing prerequisite: API {group_version} serves no {', '.join(lacking)} (forge's objects use "
                       "them): turn on its feature gate (--feature-gates, docs/bootstrap.md) or state in "
                       "cluster.api_server what the cluster serves and regenerate")
    return out


def _cni(spec: dict[str, Any], get: Get) -> list[str]:
    cni = spec.get("cni") or []
    if not cni:
        return []
    ready = [d for d in (get("/apis/apps/v1/daemonsets") or {}).get("items", [])
             if ((d.get("status") or {}).get("numberReady") or 0) > 0]
    if {(d.get("metadata") or {}).get("name") for d in ready} & set(cni):
        return []
    if spec.get("eks_vpc_cni"):
        return eks_vpc_cni(ready)
    return ["missing prerequisite: a CNI that enforces NetworkPolicy (no ready DaemonSet named "
            f"{', '.join(cni)}): install one before the first sync, or every namespace is open to every pod"]


def eks_vpc_cni(ready: list[dict[str, Any]]) -> list[str]:
    """On EKS: the VPC CNI (DaemonSet aws-node in kube-system) enforces NetworkPolicy through its
    network policy agent, the container aws-eks-nodeagent, only when it runs with
    --enable-network-policy=true (the add-on's configuration `enableNetworkPolicy: "true"`, which
    also turns on EKS's network policy controller)."""
    node = next((d for d in ready if (d.get("metadata") or {}).get("name") == VPC_CNI
                 and (d.get("metadata") or {}).get("namespace") == VPC_CNI_NAMESPACE), None)
    if node is None:
        return [f"missing prerequisite: the EKS VPC CNI (no ready DaemonSet {VPC_CNI} in {VPC_CNI_NAMESPACE}) or another CNI "
                "that enforces NetworkPolicy: install the vpc-cni add-on before the first sync"]
    containers = ((((node.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    agent = next((c for c in containers if c.get("name") == VPC_CNI_AGENT), None)
    if agent is None or "--enable-network-policy=true" not in (agent.get("args") or []):
        return [f"missing prerequisite: NetworkPolicy enforcement of the EKS VPC CNI ({VPC_CNI} runs without "
                f"{VPC_CNI_AGENT} --enable-network-policy=true): set enableNetworkPolicy: \"true\" in the vpc-cni "
                "add-on's configuration, or every namespace is open to every pod"]
    return []


def api_getter(base: str, token: str | None, context: ssl.SSLContext | None) -> Get:
    def get(path: str) -> dict[str, Any] | None:
        request = urllib.request.Request(base.rstrip("/") + path, headers={"Accept": "application/json"})
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=20, context=context) as response:
                return json.load(response)
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return None
            raise SystemExit(f"cannot read {path}: HTTP {err.code} {err.reason} (the check's RBAC must allow it)")
        except OSError as err:
            raise SystemExit(f"cannot reach the API server at {base}: {err}")
    return get


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="forge's prerequisites of a first sync")
    parser.add_argument("spec", help="the prerequisites, JSON")
    parser.add_argument("--api", help="API server URL without credentials (default: in-cluster)")
    args = parser.parse_args(argv)
    with open(args.spec, encoding="utf-8") as f:
        spec = json.load(f)
    if args.api:
        get = api_getter(args.api, None, None)
    else:
        with open(f"{SA_DIR}/token", encoding="utf-8") as f:
            token = f.read().strip()
        get = api_getter(IN_CLUSTER, token, ssl.create_default_context(cafile=f"{SA_DIR}/ca.crt"))
    lines = missing(spec, get)
    for line in lines:
        print(line)
    if not lines:
        print("every prerequisite is there")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
