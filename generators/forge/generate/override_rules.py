"""What an override may not widen (issue 36): the privilege rules forge.generate.overrides holds
every override file to, on its manifests and patches as written and on the Helm values after
merging. Each finding is (key path inside the document, what is wrong and what is allowed);
forge.generate.overrides adds the file and line, and lets through only a reviewed entry of
clusters/<cluster>/overrides/exceptions.yaml.

* RBAC: no binding (RoleBinding, ClusterRoleBinding) of any role to everyone (the groups
  `system:authenticated`, `system:unauthenticated`, `system:serviceaccounts`, the user
  `system:anonymous`), and none of `cluster-admin` to anyone: forge's components bind their own
  roles to their own service accounts. No role (Role, ClusterRole) of every verb on every
  resource (cluster-admin by another name), and no ClusterRole aggregated into Kubernetes'
  `admin`, `edit` or `view` (label `rbac.authorization.k8s.io/aggregate-to-*`): every namespace
  editor or viewer would get its rules.
* Admission webhooks (Mutating/ValidatingWebhookConfiguration): the API server calls an
  in-cluster Service (`clientConfig.service`), never a URL (`clientConfig.url`: every object a
  webhook sees leaves the cluster), and a webhook names the resources it needs (no `*`).
* External Secrets: the ClusterSecretStore's `spec.conditions` (which namespaces may read the
  store) are forge's, derived from the components that read secrets; an override store names
  its namespaces.
* Pod Security: a Namespace an override writes or patches enforces `baseline` or `restricted`
  (the privileged ones are the components' own bases).
* Host folders: a hostPath (a pod volume, a chart value `hostPath:`, a tier `type: hostPath`) is
  not `/` nor under a system folder (forge.inventory.strings.SYSTEM_FOLDERS, the inventory's rule
  for the NVMe mounts that become the cache workers' hostPaths).
"""
from __future__ import annotations

import posixpath
from typing import Any, Iterator

from forge.inventory.strings import SYSTEM_FOLDERS

Key = tuple[Any, ...]
Finding = tuple[Key, str]

EVERYONE = {("Group", "system:authenticated"): "every signed-in user and service account",
            ("Group", "system:unauthenticated"): "every anonymous request",
            ("Group", "system:serviceaccounts"): "every service account of every namespace",
            ("User", "system:anonymous"): "every anonymous request"}
ADMIN_ROLE = "cluster-admin"
BINDINGS = {"RoleBinding", "ClusterRoleBinding"}
ROLES = {"Role", "ClusterRole"}
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"
WEBHOOKS = {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
STORE_KIND = "ClusterSecretStore"
ENFORCE = "pod-security.kubernetes.io/enforce"
LEVELS = ("baseline", "restricted")


def document_findings(doc: dict[str, Any], patch: bool) -> list[Finding]:
    """The findings of one override document (a manifest, or a patch when `patch`)."""
    kind = doc.get("kind")
    out: list[Finding] = []
    if kind in BINDINGS:
        out += _binding(doc)
    if kind in ROLES:
        out += _role(doc)
    if kind in WEBHOOKS:
        out += _webhooks(doc)
    if kind == STORE_KIND:
        out += _store(doc, patch)
    if kind == "Namespace":
        out += _namespace(doc)
    out += [(where, why) for where, why in host_folders(doc)]
    return out


def _binding(doc: dict[str, Any]) -> Iterator[Finding]:
    role = doc.get("roleRef") if isinstance(doc.get("roleRef"), dict) else {}
    if role.get("kind") == "ClusterRole" and role.get("name") == ADMIN_ROLE:
        yield ("roleRef", "name"), (f"binds ClusterRole {ADMIN_ROLE} (every right on every object): an override binds a "
                                    "role of the component's own, naming the verbs and resources it needs")
    for i, subject in enumerate(doc.get("subjects") or []):
        if not isinstance(subject, dict):
            continue
        who = EVERYONE.get((subject.get("kind"), subject.get("name")))
        if who:
            yield ("subjects", i, "name"), (f"binds {role.get('kind', 'a role')} {role.get('name', '')} to {subject.get('kind')} "
                                            f"'{subject.get('name')}' ({who}): a binding names the users, groups or "
                                            "service accounts it is for")


def _role(doc: dict[str, Any]) -> Iterator[Finding]:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    for label in sorted(k for k in labels if isinstance(k, str) and k.startswith(AGGREGATE)):
        if str(labels[label]).lower() == "true":
            yield ("metadata", "labels", label), (
                f"aggregates its rules into Kubernetes' '{label.removeprefix(AGGREGATE)}' role, which every namespace's "
                "editors or viewers hold: bind the role to the users it is for instead")
    for i, rule in enumerate(doc.get("rules") or []):
        if isinstance(rule, dict) and all("*" in (rule.get(f) or []) for f in ("apiGroups", "resources", "verbs")):
            yield ("rules", i), ("grants every verb on every resource (cluster-admin by another name): a role names the "
                                 "API groups, resources and verbs it needs")


def _webhooks(doc: dict[str, Any]) -> Iterator[Finding]:
    for i, hook in enumerate(doc.get("webhooks") or []):
        if not isinstance(hook, dict):
            continue
        client = hook.get("clientConfig") if isinstance(hook.get("clientConfig"), dict) else {}
        if "url" in client:
            yield ("webhooks", i, "clientConfig", "url"), (
                f"the API server would send every object the webhook sees to {client['url']!r}: a webhook calls a Service "
                "in the cluster (clientConfig.service)")
        for j, rule in enumerate(hook.get("rules") or []):
            if not isinstance(rule, dict):
                continue
            for field in ("apiGroups", "resources"):
                wild = [r for r in rule.get(field) or [] if isinstance(r, str) and r.split("/", 1)[0] == "*"]
                if wild:
                    yield ("webhooks", i, "rules", j, field), (
                        f"{field} {wild[0]!r} sends the webhook every kind of object, Secrets included: name the "
                        f"{field} it needs")


def _store(doc: dict[str, Any], patch: bool) -> Iterator[Finding]:
    spec = doc.get("spec")
    why = ("the ClusterSecretStore's conditions fence which namespaces may read it; forge derives them from the "
           "components that read secrets (forge.components.external_secrets)")
    if patch:
        if not isinstance(spec, dict) or "$patch" in spec or "$patch" in doc:
            yield ("spec",), f"{why}: a patch may change the store's provider, never replace or remove its spec"
        elif "conditions" in spec:
            yield ("spec", "conditions"), f"{why}: a patch may not set or remove them"
        return
    conditions = spec.get("conditions") if isinstance(spec, dict) else None
    if not isinstance(conditions, list) or not conditions:
        yield ("spec", "conditions"), (f"{why}: a store an override adds lists the namespaces that may read it "
                                       "(conditions: [{namespaces: [...]}]); without conditions every namespace may")
        return
    for i, cond in enumerate(conditions):
        names = cond.get("namespaces") if isinstance(cond, dict) else None
        if not isinstance(cond, dict) or set(cond) != {"namespaces"} or not isinstance(names, list) or not names:
            yield ("spec", "conditions", i), (f"{why}: each condition of a store an override adds names its namespaces "
                                              "(namespaces: [...]), no selector or pattern")


def _namespace(doc: dict[str, Any]) -> Iterator[Finding]:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    labels = meta.get("labels")
    if not isinstance(labels, dict) or ENFORCE not in labels:
        return  # unchanged (patch), or none at all: forge validate refuses a Namespace without a level
    if labels[ENFORCE] not in LEVELS:
        yield ("metadata", "labels", ENFORCE), (
            f"Pod Security '{labels[ENFORCE]}' lets any pod of namespace {meta.get('name')} run privileged, on the host's "
            f"namespaces or with hostPath /: an override's namespace enforces {' or '.join(LEVELS)}")


def system_folder(path: str) -> bool:
    normal = "/" + posixpath.normpath(path.strip()).lstrip("/")  # POSIX keeps a leading '//'; the kubelet does not
    return normal == "/" or any(normal == s or normal.startswith(s + "/") for s in SYSTEM_FOLDERS)


def host_folders(node: Any, at: Key = ()) -> Iterator[Finding]:
    """Every hostPath below `node` on `/` or a system folder: a `hostPath:` key (a path, or a
    mapping with `path`) and a mapping of `type: hostPath` with a `path` (comma-separated: Alluxio's
    tiers)."""
    if isinstance(node, list):
        for i, value in enumerate(node):
            yield from host_folders(value, (*at, i))
        return
    if not isinstance(node, dict):
        return
    paths: list[tuple[Key, str]] = []
    if node.get("type") == "hostPath" and isinstance(node.get("path"), str):
        paths += [((*at, "path"), p.strip()) for p in node["path"].split(",")]
    host = node.get("hostPath")
    if isinstance(host, str):
        paths.append(((*at, "hostPath"), host.strip()))
    elif isinstance(host, dict) and isinstance(host.get("path"), str):
        paths.append(((*at, "hostPath", "path"), host["path"].strip()))
    for where, path in paths:
        if path.startswith("/") and system_folder(path):
            root = "/" + posixpath.normpath(path).lstrip("/") == "/"
            yield where, (f"hostPath '{path}' is {'the host root' if root else 'a system folder'}: "
                          "a pod mounting it can read or rewrite the node; a hostPath is a folder of its own "
                          f"(under /mnt, say), not / nor under {', '.join(SYSTEM_FOLDERS)}")
    for key, value in node.items():
        if isinstance(value, (dict, list)):
            yield from host_folders(value, (*at, key))


def get(data: Any, parts: Key) -> Any:
    """The value at `parts` (keys and list indexes), or ABSENT."""
    for part in parts:
        if isinstance(part, int) and isinstance(data, list) and 0 <= part < len(data):
            data = data[part]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return ABSENT
    return data


ABSENT = object()


def values_findings(generated: Any, merged: Any) -> list[Finding]:
    """The host-folder findings of merged Helm values at paths the override changed (the
    generated values passed the inventory's rules)."""
    return [(where, why) for where, why in host_folders(merged) if get(generated, where) != get(merged, where)]
