"""Every Secret the cluster's pods and chart values read is produced from Git, or is the one
bootstrap credential.

A reference is: in a pod spec, `env[].valueFrom.secretKeyRef`, `envFrom[].secretRef`, a `secret`
volume, a projected volume's `secret` source, `imagePullSecrets` (references marked `optional:
true` are not needed and not counted); an Ingress's `tls[].secretName`; a secret store's
credential (`*SecretRef` under a SecretStore's or ClusterSecretStore's provider); and in the Helm
values we set, the keys charts use for Secret names (VALUE_KEYS, VALUE_LISTS) and Alluxio's
`secrets.<role>.<name>` map. A chart value names a Secret in the component's namespace, except
Flyte's `default-env-from-secrets`, which every task pod reads: in each of the component's
namespaces.

Produced from Git: the target of an ExternalSecret in that namespace, a Secret object in the
output (one a chart renders), or one a component declares its chart or controller creates at run
time (`Component.produced_secrets`, each with its reason). Anything else must be the bootstrap
credential of the external-secrets component, and there is at most one per cluster.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, NamedTuple

from forge.validate.podsecurity import pod_specs

VALUE_KEYS = frozenset({"existingSecret", "existingSecretName", "configSecret", "secretName", "extraEnvVarsSecret"})
VALUE_REFS = frozenset({"secretKeyRef", "secretRef"})  # {name: ...}
VALUE_LISTS = frozenset({"default-env-from-secrets"})
ALL_NAMESPACES = "*"  # a value read in every namespace of its component
# JupyterHub's KubeSpawner starts servers in `hub.config.KubeSpawner.namespace`: the Secrets its
# container config names are read there (a path "@<namespace>@..." says so).
SPAWNER_KEY = "KubeSpawner"


def spawner_namespace(path: str) -> tuple[str | None, str]:
    """(namespace, path) of a value_refs path that names its namespace, else (None, path)."""
    if path.startswith("@") and "@" in path[1:]:
        ns, _, rest = path[1:].partition("@")
        return ns, rest
    return None, path
STORE_KINDS = frozenset({"SecretStore", "ClusterSecretStore"})


class Ref(NamedTuple):
    namespace: str
    name: str
    path: str


def pod_refs(spec: dict[str, Any], namespace: str, at: str) -> Iterator[Ref]:
    """Secrets one pod spec reads."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(field) or []):
            where = f"{at}.{field}[{i}]"
            for j, env in enumerate(c.get("env") or []):
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if ref and not ref.get("optional"):
                    yield Ref(namespace, ref.get("name", ""), f"{where}.env[{j}].valueFrom.secretKeyRef")
            for j, src in enumerate(c.get("envFrom") or []):
                ref = src.get("secretRef")
                if ref and not ref.get("optional"):
                    yield Ref(namespace, ref.get("name", ""), f"{where}.envFrom[{j}].secretRef")
    for i, vol in enumerate(spec.get("volumes") or []):
        secret = vol.get("secret")
        if secret and not secret.get("optional"):
            yield Ref(namespace, secret.get("secretName", ""), f"{at}.volumes[{i}].secret")
        for j, src in enumerate((vol.get("projected") or {}).get("sources") or []):
            secret = src.get("secret")
            if secret and not secret.get("optional"):
                yield Ref(namespace, secret.get("name", ""), f"{at}.volumes[{i}].projected.sources[{j}].secret")
    for i, ref in enumerate(spec.get("imagePullSecrets") or []):
        yield Ref(namespace, ref.get("name", ""), f"{at}.imagePullSecrets[{i}]")


def object_refs(obj: dict[str, Any], namespace: str,
                specs: Callable[[dict[str, Any]], list[tuple[str, dict[str, Any]]]] = pod_specs) -> Iterator[Ref]:
    """Secrets one object (its pod specs, Ingress TLS, secret-store credentials) reads."""
    for at, spec in specs(obj):
        yield from pod_refs(spec, namespace, at)
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Ingress":
        for i, tls in enumerate(spec.get("tls") or []):
            if tls.get("secretName"):
                yield Ref(namespace, tls["secretName"], f"spec.tls[{i}].secretName")
    if obj.get("kind") in STORE_KINDS:
        yield from _store_refs(spec.get("provider"), namespace, "spec.provider")


def _store_refs(node: Any, namespace: str, path: str) -> Iterator[Ref]:
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}"
            if key.endswith("SecretRef") and isinstance(value, dict) and "name" in value:
                yield Ref(value.get("namespace") or namespace, value["name"], here)
            else:
                yield from _store_refs(value, namespace, here)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _store_refs(value, namespace, f"{path}[{i}]")


def value_refs(values: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(Secret name, dotted path) in Helm values; a name read in every namespace of the component
    comes with the path prefixed by ALL_NAMESPACES."""
    if isinstance(values, list):
        for i, item in enumerate(values):
            yield from value_refs(item, f"{path}[{i}]")
        return
    if not isinstance(values, dict):
        return
    for key, value in values.items():
        here = f"{path}.{key}" if path else str(key)
        if key in VALUE_KEYS and isinstance(value, str) and value:
            yield value, here
        elif key in VALUE_REFS and isinstance(value, dict) and isinstance(value.get("name"), str) and not value.get("optional"):
            yield value["name"], f"{here}.name"
        elif key in VALUE_LISTS and isinstance(value, list):
            yield from ((name, f"{ALL_NAMESPACES}{here}") for name in value if isinstance(name, str))
        elif key == SPAWNER_KEY and isinstance(value, dict) and isinstance(value.get("namespace"), str):
            yield from ((name, f"@{value['namespace']}@{sub}") for name, sub in value_refs(value, here))
        elif key == "secrets" and isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
            # Alluxio's chart: secrets.<master|worker|...>: {<Secret name>: <mount dir>}
            yield from ((name, f"{here}.{role}.{name}") for role, names in value.items() for name in names)
        else:
            yield from value_refs(value, here)


def produced(objects: Iterable[dict[str, Any]], default_ns: str) -> set[tuple[str, str]]:
    """(namespace, name) of the Secrets the output makes: ExternalSecret targets, Secret objects."""
    out = set()
    for obj in objects:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or default_ns
        if obj.get("kind") == "ExternalSecret":
            target = ((obj.get("spec") or {}).get("target") or {}).get("name") or meta.get("name")
            out.add((ns, target))
        elif obj.get("kind") == "Secret":
            out.add((ns, meta.get("name")))
    return out
