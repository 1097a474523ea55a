"""Cluster-wide admission policies over one cluster's output (rendered or hydrated) and the
examples forge writes beside it: what the API server would refuse, or warn about, on the first
sync, and what would hang for want of a Secret.

Pod Security (forge.validate.podsecurity): every pod spec is held to the level its namespace
enforces (a failure: the API server would reject the pod) and to the level it warns at (a
failure too, unless the control is one of the reviewed EXCEPTIONS: the level a namespace warns at
is the one we mean to meet). A namespace is read from the Namespace objects of the cluster's
output; an object that names none lands in its Application's destination. Examples name no
namespace: they are written for the Flyte project namespaces and held to each one's levels.

Project namespaces (those labelled WORKLOAD_LABEL) are never privileged: a namespace whose Pod
Security label enforces `privileged` fails, unless forge's baseline + IPC_LOCK admission policy
and its Deny binding (forge.components.flyte.fence) are in the output and the binding selects it.
Such a fenced namespace holds pods to baseline with IPC_LOCK as the one capability added.

Secrets (forge.validate.secretrefs): every Secret a pod, Ingress, secret store or chart value
reads is produced from Git or is the one bootstrap credential.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple

from forge.validate.objects import load_yaml_stream, object_id
from forge.validate.podsecurity import ENFORCE, LEVELS, WARN, level_of, pod_specs, violations

Specs = Callable[[dict[str, Any]], list[tuple[str, dict[str, Any]]]]  # pod_specs, or a PodSpecs memo
from forge.validate.secretrefs import ALL_NAMESPACES, Ref, object_refs, produced, spawner_namespace, value_refs

EXAMPLES_DIR = "examples"
# Namespaces labelled so run workloads (Flyte's project namespaces): where examples are applied.
WORKLOAD_LABEL = "forge.exa.ai/flyte-project"

# Controls a pod of ours may break at the namespace's warn level (never at its enforce level),
# each with the reason it was accepted. (rule, detail) as forge.validate.podsecurity reports them.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("capabilities", "IPC_LOCK"): "RDMA pods register (pin) memory with the NIC; without IPC_LOCK they are bound by the "
                                  "container runtime's RLIMIT_MEMLOCK, which forge does not manage on the nodes",
}


# The admission policy that holds a Pod Security `privileged` namespace to baseline + IPC_LOCK
# (forge.components.flyte.fence): its name, and the namespace label its binding selects.
FENCE_POLICY = "forge-baseline-ipc-lock"
FENCE_LABEL = ("forge.exa.ai/pod-security", "baseline-ipc-lock")
FENCE_ALLOWS = frozenset({("capabilities", "IPC_LOCK")})


class Problem(NamedTuple):
    component: str
    where: str  # the object (and file, for examples)
    path: str
    reason: str


def namespace_labels(objects: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Namespace name -> its labels, for the Namespace objects among `objects`."""
    return {(o.get("metadata") or {}).get("name"): ((o.get("metadata") or {}).get("labels") or {})
            for o in objects if o.get("kind") == "Namespace"}


def _example_files(overlay: Path) -> list[Path]:
    """overlay.glob("*/examples/*.yaml"), sorted, by listing folders (pathlib's glob costs more
    than reading the files, once per cluster)."""
    if not overlay.is_dir():
        return []
    found = []
    for component in os.listdir(overlay):
        folder = overlay / component / EXAMPLES_DIR
        if folder.is_dir():
            found += [folder / name for name in os.listdir(folder) if name.endswith(".yaml")]
    return sorted(found)


def example_objects(root: Path, cluster: str) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """component -> (repo-relative file, object) of every example under overlays/<cluster>/*/examples/."""
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for path in _example_files(root / "overlays" / cluster):
        rel = path.relative_to(root).as_posix()
        for obj in load_yaml_stream(path.read_text(encoding="utf-8")):
            out.setdefault(path.parent.parent.name, []).append((rel, obj))
    return out


def pod_security(objects: dict[str, list[dict[str, Any]]], destinations: dict[str, str],
                 examples: dict[str, list[tuple[str, dict[str, Any]]]], all_objects: Iterable[dict[str, Any]],
                 specs: Specs = pod_specs) -> list[Problem]:
    """Pod Security problems of every pod spec in `objects` (component -> objects) and `examples`.
    `destinations`: component -> its Application's namespace; `all_objects`: the whole cluster's
    output, where the Namespaces are."""
    everything = list(all_objects)
    labels = namespace_labels(everything)
    workload = sorted(ns for ns, lab in labels.items() if WORKLOAD_LABEL in lab)
    fenced = fenced_namespaces(everything, labels)
    out: list[Problem] = privileged_namespaces(objects, labels, fenced)
    for component, objs in sorted(objects.items()):
        for obj in objs:
            ns = (obj.get("metadata") or {}).get("namespace") or destinations.get(component, "")
            found = specs(obj)
            if found:
                out += _check(component, object_id(obj), found, [ns], labels, fenced)
    for component, items in sorted(examples.items()):
        for rel, obj in items:
            ns = (obj.get("metadata") or {}).get("namespace")
            found = specs(obj)
            if found:
                out += _check(component, f"{rel} {object_id(obj)}", found, [ns] if ns else workload or [destinations.get(component, "")],
                              labels, fenced)
    return out


def fenced_namespaces(objects: Iterable[dict[str, Any]], labels: dict[str, dict[str, Any]]) -> frozenset[str]:
    """Namespaces forge's baseline + IPC_LOCK policy holds: the policy and a binding of it that
    denies, selecting the namespace by FENCE_LABEL, are among `objects`."""
    policy = bound = False
    for o in objects:
        if (o.get("metadata") or {}).get("name") != FENCE_POLICY:
            continue
        spec = o.get("spec") or {}
        if o.get("kind") == "ValidatingAdmissionPolicy" and spec.get("failurePolicy", "Fail") == "Fail":
            policy = True
        elif (o.get("kind") == "ValidatingAdmissionPolicyBinding" and spec.get("policyName") == FENCE_POLICY
              and "Deny" in (spec.get("validationActions") or [])
              and ((spec.get("matchResources") or {}).get("namespaceSelector") or {}) == {"matchLabels": dict([FENCE_LABEL])}):
            bound = True
    if not (policy and bound):
        return frozenset()
    return frozenset(ns for ns, lab in labels.items() if lab.get(FENCE_LABEL[0]) == FENCE_LABEL[1])


def privileged_namespaces(objects: dict[str, list[dict[str, Any]]], labels: dict[str, dict[str, Any]],
                          fenced: frozenset[str]) -> list[Problem]:
    """A project namespace (WORKLOAD_LABEL) that admits privileged pods: Pod Security enforces
    `privileged` (or nothing) and forge's admission policy does not hold it."""
    out = []
    for component, objs in sorted(objects.items()):
        for obj in objs:
            name = (obj.get("metadata") or {}).get("name")
            if obj.get("kind") != "Namespace" or WORKLOAD_LABEL not in labels.get(name, {}):
                continue
            if level_of(labels[name], ENFORCE) == "privileged" and name not in fenced:
                out.append(Problem(component, object_id(obj), f"metadata.labels.{ENFORCE}",
                                   f"project namespace '{name}' is privileged: a task could run a privileged container or mount "
                                   f"hostPath /; enforce 'baseline' (or 'restricted'), or bind it to admission policy "
                                   f"{FENCE_POLICY} (label {FENCE_LABEL[0]}={FENCE_LABEL[1]})"))
    return out


def _check(component: str, where: str, specs: list[tuple[str, dict[str, Any]]], namespaces: list[str],
           labels: dict[str, dict[str, Any]], fenced: frozenset[str] = frozenset()) -> list[Problem]:
    out = []
    for ns in namespaces:
        if ns not in labels:
            out.append(Problem(component, where, "metadata.namespace",
                               f"namespace '{ns}' has no Namespace object in the cluster's output: its Pod Security level is unknown"))
            continue
        enforce, warn = level_of(labels[ns], ENFORCE), level_of(labels[ns], WARN)
        if ns in fenced and enforce == "privileged":  # the admission policy enforces baseline + IPC_LOCK
            enforce, by = "baseline", f"admission policy {FENCE_POLICY} (namespace {ns})"
        else:
            by = f"Pod Security '{enforce}' (enforced in namespace {ns})"
        for at, spec in specs:
            enforced = {v for v in violations(spec, enforce) if by.startswith("Pod") or (v.rule, v.detail) not in FENCE_ALLOWS}
            for v in sorted(enforced):
                out.append(Problem(component, where, f"{at}.{v.path}", f"{by} forbids {v.rule}: {v.detail}"))
            if LEVELS.index(warn) > LEVELS.index(enforce):
                for v in sorted(set(violations(spec, warn)) - enforced):
                    if (v.rule, v.detail) not in EXCEPTIONS:
                        out.append(Problem(component, where, f"{at}.{v.path}",
                                           f"Pod Security '{warn}' (warned in namespace {ns}) forbids {v.rule}: {v.detail}; "
                                           "meet it, or add a reviewed exception (forge.validate.admission.EXCEPTIONS)"))
    return out


def secret_references(objects: dict[str, list[dict[str, Any]]], values: dict[str, Any], destinations: dict[str, str],
                      namespaces: dict[str, tuple[str, ...]], runtime: dict[str, dict[str, str]],
                      bootstrap: tuple[str, str] | None, specs: Specs = pod_specs) -> list[Problem]:
    """Secrets read (by pods, Ingresses, secret stores, chart values) that nothing in Git produces
    and that are not the bootstrap credential (forge.validate.secretrefs). Per component:
    `values` its Helm values, `namespaces` all it deploys into, `runtime` the Secrets its chart or
    controller creates at run time (name -> reason)."""
    made = set()
    for component, objs in objects.items():
        made |= produced(objs, destinations.get(component, ""))
    for component, names in runtime.items():
        made |= {(ns, name) for name in names for ns in namespaces.get(component, ())}
    out = []

    def need(component: str, where: str, ref: Ref) -> None:
        if (ref.namespace, ref.name) in made or (ref.namespace, ref.name) == bootstrap:
            return
        out.append(Problem(component, where, ref.path,
                           f"Secret '{ref.name}' in namespace '{ref.namespace}' is produced by nothing in Git (no ExternalSecret "
                           "targets it, no chart creates it) and is not the bootstrap credential: declare it in the component's "
                           "secrets() or, if its chart makes it at run time, in produced_secrets() with the reason"))

    for component, objs in sorted(objects.items()):
        for obj in objs:
            ns = (obj.get("metadata") or {}).get("namespace") or destinations.get(component, "")
            for ref in object_refs(obj, ns, specs):
                need(component, object_id(obj), ref)
    for component, vals in sorted(values.items()):
        for name, path in value_refs(vals):
            spawned, path = spawner_namespace(path)
            if spawned is not None:  # read where JupyterHub's spawner starts servers
                need(component, "values.yaml", Ref(spawned, name, path))
                continue
            spread = path.startswith(ALL_NAMESPACES)
            for ns in (namespaces.get(component, ()) if spread else (destinations.get(component, ""),)):
                need(component, "values.yaml", Ref(ns, name, path.lstrip(ALL_NAMESPACES)))
    return out
