"""Overrides that widen privileges are refused (issue 36; forge.generate.override_rules): each input
below was accepted by generate, render and validate at 0 failures before the rule. A binding of
cluster-admin to everyone, a privileged namespace with a hostPath / pod, a webhook on every
resource calling a URL, the secret store's conditions removed, External Secrets' rights aggregated
to edit, an Alluxio tier on /etc; Flyte's login off was refused already. A deliberate exception is a
reviewed entry of clusters/<c>/overrides/exceptions.yaml. Real generate."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.generate.test_generate import snapshot
from tests.generate.test_overrides import put
from tests.helpers import forge

O = "clusters/h200/overrides"
EXCEPTIONS = f"{O}/exceptions.yaml"


def binding(kind: str, name: str, role: str = "cluster-admin") -> str:
    return ("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: everyone\nroleRef:\n"
            f"  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {role}\nsubjects:\n"
            f"  - apiGroup: rbac.authorization.k8s.io\n    kind: {kind}\n    name: {name}\n")


NAMESPACE_PRIVILEGED = ("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: loki\n  labels:\n"
                        "    pod-security.kubernetes.io/enforce: privileged\n    pod-security.kubernetes.io/warn: privileged\n")
ROOT_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: root
  namespace: loki
spec:
  selector: {matchLabels: {app: root}}
  template:
    metadata: {labels: {app: root}}
    spec:
      priorityClassName: system-cluster-critical
      containers:
        - name: sh
          image: busybox:1.36
      volumes:
        - name: host
          hostPath: {path: /}
"""


def webhook(client: str, resources: str = '["*/*"]') -> str:
    return ("apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata:\n  name: everything\n"
            "webhooks:\n  - name: everything.example.com\n    admissionReviewVersions: [v1]\n    sideEffects: None\n"
            f"    clientConfig:\n      {client}\n    rules:\n      - apiGroups: [\"\"]\n        apiVersions: [v1]\n"
            f"        operations: [CREATE]\n        resources: {resources}\n")


STORE = "apiVersion: external-secrets.io/v1\nkind: ClusterSecretStore\nmetadata:\n  name: forge\n"
TIERS = ("tieredstore:\n  levels:\n    - {level: 0, alias: MEM, mediumtype: MEM, path: /dev/shm, type: emptyDir, quota: 1Gi}\n"
         "    - level: 1\n      alias: SSD\n      mediumtype: SSD\n      type: hostPath\n      path: {path}\n      quota: 100GB\n")


def refused(root: Path, *expected: str) -> str:
    """generate: exit 2, one line per finding (`error:` before the first), each expected one among them,
    nothing written."""
    before = snapshot(root / "overlays")
    result = forge(root, "generate")
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert result.output.startswith("error: "), result.output
    lines = [line.removeprefix("error: ") for line in result.output.splitlines()]
    for want in expected:
        assert any(line.startswith(want) for line in lines), result.output
    assert snapshot(root / "overlays") == before
    return result.output


def accepted(root: Path) -> None:
    result = forge(root, "generate")
    assert result.exit_code == 0, result.output


def planted(root: Path, files: dict[str, str]) -> Path:
    assert forge(root, "generate").exit_code == 0
    for rel, text in files.items():
        put(root, rel, text)
    return root


HOW = "if it is meant, a reviewed entry of clusters/h200/overrides/exceptions.yaml (component: "


# 1. A binding to everyone, or of cluster-admin.
@pytest.mark.parametrize(("kind", "name", "role", "expected"), [
    ("Group", "system:authenticated", "cluster-admin",
     f"{O}/external-secrets/crb.yaml:12: subjects[0].name: binds ClusterRole cluster-admin to Group 'system:authenticated' "
     "(every signed-in user and service account): a binding names the users, groups or service accounts it is for; "
     f"{HOW}external-secrets, file: crb.yaml, path: subjects[0].name, reason, reviewed_by) lets exactly this through"),
    ("Group", "system:unauthenticated", "view", f"{O}/external-secrets/crb.yaml:12: subjects[0].name: binds ClusterRole view"),
    ("User", "system:anonymous", "view", f"{O}/external-secrets/crb.yaml:12: subjects[0].name: binds ClusterRole view to User"),
    ("Group", "platform-admins", "cluster-admin",
     f"{O}/external-secrets/crb.yaml:8: roleRef.name: binds ClusterRole cluster-admin (every right on every object)"),
])
def test_a_binding_to_everyone_or_of_cluster_admin_is_refused(repo_inputs: Path, kind, name, role, expected):
    refused(planted(repo_inputs, {f"{O}/external-secrets/crb.yaml": binding(kind, name, role)}), f"{expected}")


ROLE = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: mine\n"


@pytest.mark.parametrize(("text", "expected"), [
    (ROLE + "rules:\n  - apiGroups: ['*']\n    resources: ['*']\n    verbs: ['*']\n",
     "role.yaml:6: rules[0]: grants every verb on every resource (cluster-admin by another name)"),
    (ROLE + "  labels:\n    rbac.authorization.k8s.io/aggregate-to-edit: 'true'\nrules:\n  - apiGroups: ['']\n"
     "    resources: [secrets]\n    verbs: [get]\n",
     "role.yaml:6: metadata.labels.rbac.authorization.k8s.io/aggregate-to-edit: aggregates its rules into Kubernetes' 'edit' role"),
])
def test_a_role_of_every_right_or_aggregated_to_edit_is_refused(repo_inputs: Path, text, expected):
    refused(planted(repo_inputs, {f"{O}/external-secrets/role.yaml": text}), f"{O}/external-secrets/{expected}")


def test_a_binding_of_a_role_to_a_named_group_is_accepted(repo_inputs: Path):
    accepted(planted(repo_inputs, {f"{O}/external-secrets/crb.yaml": binding("Group", "platform-admins", "view")}))


# 2. A privileged namespace, a hostPath / pod.
@pytest.mark.parametrize(("files", "expected"), [
    ({f"{O}/loki/patches/namespace.yaml": NAMESPACE_PRIVILEGED},
     f"{O}/loki/patches/namespace.yaml:6: metadata.labels.pod-security.kubernetes.io/enforce: Pod Security 'privileged' lets "
     "any pod of namespace loki run privileged, on the host's namespaces or with hostPath /: an override's namespace "
     "enforces baseline or restricted"),
    ({f"{O}/loki/pwn.yaml": NAMESPACE_PRIVILEGED.replace("name: loki", "name: pwn")},
     f"{O}/loki/pwn.yaml:6: metadata.labels.pod-security.kubernetes.io/enforce: Pod Security 'privileged'"),
    ({f"{O}/loki/patches/namespace.yaml": NAMESPACE_PRIVILEGED, f"{O}/loki/deployment.yaml": ROOT_DEPLOYMENT},
     f"{O}/loki/deployment.yaml:17: spec.template.spec.volumes[0].hostPath.path: hostPath '/' is the host root: a pod "
     "mounting it can read or rewrite the node"),
    # In a namespace the base makes privileged already (Alloy reads the nodes' logs): the folder is refused.
    ({f"{O}/alloy/reader.yaml": ROOT_DEPLOYMENT.replace("loki", "alloy").replace("path: /}", "path: /etc}")},
     f"{O}/alloy/reader.yaml:17: spec.template.spec.volumes[0].hostPath.path: hostPath '/etc' is a system folder"),
])
def test_a_privileged_namespace_or_a_host_root_pod_is_refused(repo_inputs: Path, files, expected):
    refused(planted(repo_inputs, files), f"{expected}")


# 3. A webhook calling out, or seeing everything.
@pytest.mark.parametrize(("text", "expected"), [
    (webhook("url: https://hooks.example.com/mutate"),
     f"{O}/prometheus/webhook.yaml:10: webhooks[0].clientConfig.url: the API server would send every object the webhook sees "
     "to 'https://hooks.example.com/mutate': a webhook calls a Service in the cluster (clientConfig.service)"),
    (webhook("service: {name: prometheus-operator, namespace: monitoring}"),
     f"{O}/prometheus/webhook.yaml:15: webhooks[0].rules[0].resources: resources '*/*' sends the webhook every kind of object"),
])
def test_a_webhook_calling_a_url_or_on_every_resource_is_refused(repo_inputs: Path, text, expected):
    refused(planted(repo_inputs, {f"{O}/prometheus/webhook.yaml": text}), f"{expected}")


def test_a_webhook_on_a_service_and_named_resources_is_accepted(repo_inputs: Path):
    text = webhook("service: {name: prometheus-operator, namespace: monitoring}", "[configmaps]")
    accepted(planted(repo_inputs, {f"{O}/prometheus/webhook.yaml": text}))


# 4. The secret store's conditions.
@pytest.mark.parametrize(("rel", "text", "expected"), [
    ("patches/store.yaml", STORE + "spec:\n  conditions: null\n",
     "patches/store.yaml:6: spec.conditions: the ClusterSecretStore's conditions fence which namespaces may read it"),
    ("patches/store.yaml", STORE + "spec:\n  conditions:\n    - namespaceSelector: {}\n",
     "patches/store.yaml:6: spec.conditions: the ClusterSecretStore's conditions"),
    ("patches/store.yaml", STORE + "spec: null\n", "patches/store.yaml:5: spec: the ClusterSecretStore's conditions"),
    ("store.yaml", STORE.replace("name: forge", "name: open") + "spec:\n  provider:\n    fake: {data: []}\n",
     "store.yaml:5: spec.conditions: the ClusterSecretStore's conditions"),
    ("store.yaml", STORE.replace("name: forge", "name: open") + "spec:\n  conditions:\n    - namespaceRegexes: ['.*']\n",
     "store.yaml:7: spec.conditions[0]: the ClusterSecretStore's conditions"),
])
def test_an_override_opening_the_secret_store_is_refused(repo_inputs: Path, rel, text, expected):
    refused(planted(repo_inputs, {f"{O}/external-secrets/{rel}": text}), f"{O}/external-secrets/{expected}")


# 5. External Secrets' rights aggregated to edit or admin.
@pytest.mark.parametrize(("text", "expected"), [
    ("rbac:\n  aggregateToEdit: true\n", "values.yaml:2: rbac.aggregateToEdit: External Secrets' write rights stay out of "
                                         "the edit and admin roles"),
    ("rbac:\n  aggregateToAdmin: true\n", "values.yaml:2: rbac.aggregateToAdmin: External Secrets' write rights"),
    ("rbac: null\n", "values.yaml:1: rbac.aggregateToAdmin: External Secrets' write rights"),
])
def test_external_secrets_rights_aggregated_to_edit_are_refused(repo_inputs: Path, text, expected):
    refused(planted(repo_inputs, {f"{O}/external-secrets/values.yaml": text}), f"{O}/external-secrets/{expected}")


# 6. Flyte's login (refused before this rules: forge.components.flyte.auth.guarded).
def test_flyte_s_login_off_stays_refused(repo_inputs: Path):
    refused(planted(repo_inputs, {f"{O}/flyte/values.yaml": "configuration:\n  auth:\n    enabled: false\n"}),
            f"{O}/flyte/values.yaml:3: configuration.auth.enabled: Flyte's login (components.flyte.auth)")


# 7. An Alluxio tier, or a worker volume, on a system folder.
@pytest.mark.parametrize(("text", "expected"), [
    (TIERS.replace("{path}", "/etc"), "values.yaml:8: tieredstore.levels[1].path: hostPath '/etc' is a system folder"),
    (TIERS.replace("{path}", "/mnt/nvme0,/var/lib/kubelet/pods"),
     "values.yaml:8: tieredstore.levels[1].path: hostPath '/var/lib/kubelet/pods' is a system folder"),
    ("worker:\n  extraVolumes:\n    - name: etc\n      hostPath: {path: /etc, type: Directory}\n",
     "values.yaml:4: worker.extraVolumes[0].hostPath.path: hostPath '/etc' is a system folder"),
    ("shortCircuit:\n  volumeType: hostPath\n  hostPath: /\n", "values.yaml:3: shortCircuit.hostPath: hostPath '/' is the host root"),
    # Spellings of one folder: a leading '//' (POSIX keeps it, the kubelet does not), a space after a comma.
    ("shortCircuit:\n  hostPath: //etc/\n", "values.yaml:2: shortCircuit.hostPath: hostPath '//etc/' is a system folder"),
    (TIERS.replace("{path}", "'/mnt/nvme0, /etc'"), "values.yaml:8: tieredstore.levels[1].path: hostPath '/etc' is a system"),
])
def test_an_alluxio_tier_or_volume_on_a_system_folder_is_refused(repo_inputs: Path, text, expected):
    out = refused(planted(repo_inputs, {f"{O}/alluxio/values.yaml": text}), f"{O}/alluxio/{expected}")
    assert "not / nor under /bin, /boot, /dev, /etc" in out and f"{HOW}alluxio, file: values.yaml" in out


def test_an_alluxio_tier_on_a_folder_of_its_own_is_accepted(repo_inputs: Path):
    accepted(planted(repo_inputs, {f"{O}/alluxio/values.yaml": TIERS.replace("{path}", "/mnt/cache")}))


def test_an_exception_lets_exactly_one_finding_through_and_a_stale_one_is_refused(repo_inputs: Path):
    planted(repo_inputs, {f"{O}/prometheus/webhook.yaml": webhook("url: https://hooks.example.com/mutate", "[configmaps]")})
    entry = ("exceptions:\n  - component: prometheus\n    file: webhook.yaml\n    path: webhooks[0].clientConfig.url\n"
             "    reason: the vendor's policy engine, outside the cluster (SEC-42)\n    reviewed_by: alice\n")
    put(repo_inputs, EXCEPTIONS, entry)
    accepted(repo_inputs)
    # Beside it, a finding of another path is still refused.
    put(repo_inputs, f"{O}/prometheus/webhook.yaml", webhook("url: https://hooks.example.com/mutate"))
    refused(repo_inputs, f"{O}/prometheus/webhook.yaml:15: webhooks[0].rules[0].resources: resources '*/*'")
    # The finding gone, the entry is stale.
    put(repo_inputs, f"{O}/prometheus/webhook.yaml", webhook("service: {name: a, namespace: monitoring}", "[configmaps]"))
    refused(repo_inputs, f"{EXCEPTIONS}:2: [prometheus] webhook.yaml webhooks[0].clientConfig.url: stale exception")
