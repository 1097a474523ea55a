"""Rings in the inventory: each cluster names its ring (cluster.rollout), clusters/rings.yaml
orders them with their soak and gates; Applications track their ring's ref; sync windows and the
emergency brake in the AppProject. Every bad input: one `file:line: field: message`, exit 2."""
from __future__ import annotations


import pytest

from forge.argocd.bootstrap import bootstrap_objects
from forge.fleet import components_of
from forge.facts.versions import chart_pins
from forge.validate.crd import CrdSchemas
from tests.helpers import (A100_FILE, REPO, copy_repo_inputs, edit, forge, generated, inventory_text, line_of, model,
                           needs_upstream, problems, upstream_data)

RINGS = (REPO / "clusters" / "rings.yaml").read_text()
ROLLOUT = "  rollout:\n    ring: canary\n"


def bootstrap(text: str):
    cluster = model("a100", text)
    return bootstrap_objects(cluster, list(components_of(cluster)), chart_pins(REPO))


def test_the_shipped_fleets_are_canary_then_fleet():
    assert generated("clusters/a100/argocd/root-application.yaml")["spec"]["source"]["targetRevision"] == "forge/ring/canary"
    assert generated("clusters/h200/argocd/root-application.yaml")["spec"]["source"]["targetRevision"] == "forge/ring/fleet"
    result = forge(REPO, "rings")
    assert result.exit_code == 0
    assert [line.split(":")[0] for line in result.output.splitlines()] == ["source", "canary", "fleet"]
    assert "clusters a100" in result.output and "clusters h200" in result.output


def test_without_a_ring_the_applications_track_git_revision():
    text = inventory_text("a100")
    start = text.index("  # Rollout (docs/rollout.md)")
    plain = text[:start] + text[text.index("  s3:\n"):]
    files = bootstrap(plain)
    assert files["root-application.yaml"]["spec"]["source"]["targetRevision"] == "main"
    assert not [name for name, obj in files.items() if "syncWindows" in obj.get("spec", {})]


def test_sync_windows_and_the_brake_become_appproject_windows_nothing_can_sync_through():
    text = edit(inventory_text("a100"), ROLLOUT, ROLLOUT + "    brake: true\n    sync_windows:\n"
                "      - {kind: allow, schedule: '0 9 * * 1-4', duration: 6h, components: [gpu-operator], time_zone: Europe/Berlin}\n")
    files = bootstrap(text)
    brake = {"kind": "deny", "schedule": "* * * * *", "duration": "1h", "timeZone": "UTC",
             "applications": ["a100-*"], "manualSync": False}
    # The window is the GPU Operator's project's (each Application has a project of its own) ...
    assert files["appproject-gpu-operator.yaml"]["spec"]["syncWindows"] == [
        {"kind": "allow", "schedule": "0 9 * * 1-4", "duration": "6h", "timeZone": "Europe/Berlin",
         "applications": ["a100-gpu-operator"], "manualSync": False},
        # the brake: a deny window always open over every Application of the cluster, manual syncs too
        brake]
    # ... and the brake every project's, the root's included.
    projects = {n: o for n, o in files.items() if o.get("kind") == "AppProject"}
    assert len(projects) > 10 and all(brake in o["spec"]["syncWindows"] for o in projects.values())
    assert files["appproject-kueue.yaml"]["spec"]["syncWindows"] == [brake]


@needs_upstream
def test_the_appproject_with_windows_validates_against_argo_cd_v3_4_4():
    text = edit(inventory_text("a100"), ROLLOUT, ROLLOUT + "    brake: true\n    sync_windows:\n"
                "      - {kind: deny, schedule: '0 0 * * 5', duration: 72h}\n")
    schemas = CrdSchemas()
    schemas.add_dir(upstream_data("argo-cd-crds-v3.4.4") / "crds")
    # One AppProject per component (and the root's): a window naming no components is in every one,
    # next to the brake, and each project validates.
    projects = {n: o for n, o in bootstrap(text).items() if o.get("kind") == "AppProject"}
    assert "appproject-bootstrap.yaml" in projects and "appproject-gpu-operator.yaml" in projects
    for name, project in projects.items():
        assert len(project["spec"]["syncWindows"]) == 2, name
        assert schemas.validate(project) == [], name


@pytest.mark.parametrize("new, needle, path, message", [
    ("    ring: Canary\n", "    ring: Canary", "cluster.rollout.ring", "is not a valid name"),
    ("    ring: canary\n    brake: yes-please\n", "brake: yes-please", "cluster.rollout.brake", "expected true or false"),
    ("    ring: canary\n    central: 1\n", "central: 1", "cluster.rollout.central", "expected true or false"),
    ("    ring: canary\n    sync_windows:\n      - {kind: allow, schedule: '0 9 * * *', duration: 6h, time_zone: ''}\n",
     "time_zone: ''", "cluster.rollout.sync_windows[0].time_zone", "at least 1 character"),
    ("    ring: canary\n    sync_windows:\n      - {kind: allow, schedule: '0 9 * *', duration: 6h}\n",
     "schedule: '0 9 * *'", "cluster.rollout.sync_windows[0].schedule", "a cron schedule of five fields"),
    ("    ring: canary\n    sync_windows:\n      - {kind: allow, schedule: '0 9 * * *', duration: 6 hours}\n",
     "duration: 6 hours", "cluster.rollout.sync_windows[0].duration", "a duration in minutes or hours, such as 90m or 6h"),
    ("    ring: canary\n    sync_windows:\n      - {kind: pause, schedule: '0 9 * * *', duration: 6h}\n",
     "kind: pause", "cluster.rollout.sync_windows[0].kind", "'allow' or 'deny'"),
    ("    ring: canary\n    sync_windows:\n      - {kind: deny, schedule: '0 9 * * *', duration: 6h, components: [network-operator]}\n",
     "components: [network-operator]", "cluster.rollout.sync_windows[0].components[0]",
     "'network-operator' is not a component of this cluster: name one of"),
])
def test_bad_rollout_settings_name_their_line(new, needle, path, message):
    text = edit(inventory_text("a100"), "    ring: canary\n", new)
    found = [p for p in problems(text, A100_FILE) if f": {path}: " in p]
    assert found and f"{A100_FILE}:{line_of(text, needle)}: {path}: " in found[0] and message in found[0], problems(text, A100_FILE)


@pytest.mark.parametrize("field", ["argocd_url", "prometheus_url"])
def test_a_bad_url_names_its_line(field):
    host = field.removesuffix("_url")
    shipped = {"argocd_url": "https://argocd.a100.exa.internal",  # Prometheus through Grafana (docs/rollout.md)
               "prometheus_url": "https://grafana.a100.exa.internal/api/datasources/proxy/uid/prometheus"}[field]
    text = edit(inventory_text("a100"), f"{field}: {shipped}", f"{field}: {host}.a100")
    found = problems(text, A100_FILE)
    assert any(p.startswith(f"{A100_FILE}:{line_of(text, f'{field}: {host}.a100')}: cluster.rollout.{field}: ")
               and "is not a URL: expected http:// or https://" in p for p in found), found


@pytest.fixture
def root(tmp_path):
    dest = copy_repo_inputs(tmp_path)
    return dest


@pytest.mark.parametrize("old, new, needle, message", [
    ("  - name: fleet\n", "  - name: canary\n", "  - name: canary", "ring 'canary' is listed twice (first as rings[0])"),
    ("soak_minutes: 60", "soak_minutes: -5", "soak_minutes: -5", "greater than or equal to 0"),
    ("soak_minutes: 60", "soak_minutes: 60\n    wait: 5", "wait: 5", "unknown key"),
    ("NicPortDown]\n", "Nic Port Down]\n", "Nic Port Down]", "'Nic Port Down' is not an alert name"),
])
def test_bad_rings_file_names_its_line(root, old, new, needle, message):
    path = root / "clusters" / "rings.yaml"
    text = RINGS.replace(old, new, 1) if old != "  - name: fleet\n" else RINGS.replace(old, new)
    path.write_text(text)
    result = forge(root, "rings")
    assert result.exit_code == 2
    first = result.output.splitlines()[0].removeprefix("error: ")
    line = [i + 1 for i, l in enumerate(text.splitlines()) if needle in l][-1]
    assert first.startswith(f"clusters/rings.yaml:{line}: ") and message in first, result.output


def test_a_cluster_naming_a_ring_the_file_lacks_is_refused_by_check(root):
    path = root / A100_FILE
    text = edit(path.read_text(), "    ring: canary\n", "    ring: early\n")
    path.write_text(text)
    for command in ("check", "rings", "promote"):
        result = forge(root, command, *(["fleet"] if command == "promote" else []))
        assert result.exit_code == 2, (command, result.output)
        assert result.output.splitlines()[0] == (f"error: {A100_FILE}:{line_of(text, 'ring: early')}: cluster.rollout.ring: "
                                                 "ring 'early' is not in clusters/rings.yaml: name one of canary, fleet")


def test_a_ring_named_without_a_rings_file_is_refused(root):
    (root / "clusters" / "rings.yaml").unlink()
    result = forge(root, "rings")
    assert result.exit_code == 2 and result.output.startswith("error: clusters/rings.yaml:1: <top>: cannot read: it does not exist")
