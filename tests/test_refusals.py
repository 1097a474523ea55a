"""docs/refusals.md's table kept true: one probe per row plants the row's input and checks it is
refused with the row's words (exit 2 for the commands), and every probe has a row."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from forge.commands.main import main
from tests.generate.test_override_privileges import NAMESPACE_PRIVILEGED, STORE, TIERS, binding, webhook
from tests.helpers import REPO, copy_repo_inputs, edit, inventory_text, problems

H200 = inventory_text("h200")
GPU_18 = ("      exa.ai/pool: interactive\n    taints:\n      - {key: nvidia.com/gpu, effect: NoSchedule}\n"
          "    mig_layout: all-1g\n  - name: h200-gpu-18")


def table() -> dict[str, str]:
    """Class -> the words its message holds (the last column, in backticks)."""
    rows = {}
    for line in (REPO / "docs" / "refusals.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 4 and cells[0] not in ("Class",) and not set(cells[0]) <= {"-"}:
            rows[cells[0]] = re.fullmatch(r"`(.+)`", cells[3]).group(1)
    return rows


def inventory(old: str, new: str) -> str:
    return "\n".join(problems(edit(H200, old, new)))


def generate(root: Path, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(main, ["generate", "--root", str(root)], env=env)
    assert result.exit_code == 2, result.output
    return result.output


def journal(root: Path, entries) -> str:
    (root / ".forge-staging").mkdir()
    (root / ".forge-staging/journal.json").write_text(json.dumps(entries))
    return generate(root)


def symlink(root: Path) -> str:
    (root / "overlays").symlink_to(root.parent, target_is_directory=True)
    return generate(root)


def special(root: Path) -> str:
    path = root / "clusters/h200/inventory.yaml"
    path.unlink()
    os.mkfifo(path)
    return generate(root)


def lock(root: Path) -> str:
    hold = ("import sys, time; from pathlib import Path; from forge.files.lock import repo_lock\n"
            "with repo_lock(Path(sys.argv[1]), 'generate'):\n    print('held', flush=True); time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        forge = Path(sys.executable).parent / "forge"
        done = subprocess.run([str(forge), "generate", "--root", str(root)], capture_output=True, text=True,
                              env={**os.environ, "FORGE_LOCK_TIMEOUT": "0"}, timeout=300)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 2, done.stderr
    return done.stderr


def upstream_data(root: Path) -> str:
    from forge.errors import ForgeError
    from forge.validate.upstream_data import crd_documents

    source = os.environ.get("FORGE_UPSTREAM") or str(REPO.parent / "shared" / "upstream")
    crd = Path(source) / "kueue-0.19.2/crds/clusterqueues.kueue.x-k8s.io.yaml"
    if not crd.is_file():
        pytest.skip("needs the upstream chart data (FORGE_UPSTREAM)")
    cut = root / "clusterqueues.yaml"
    cut.write_text(crd.read_text(encoding="utf-8")[:3000], encoding="utf-8")  # a copy that stopped early
    with pytest.raises(ForgeError) as caught:
        crd_documents(cut)
    return str(caught.value)


def disk(root: Path) -> str:
    (root / ".cache").write_text("")
    return generate(root)


def data_file(root: Path) -> str:
    from tests.test_data_files_hostile import BOMB

    (root / "clusters/rings.yaml").write_text(BOMB, encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--root", str(root)])
    assert result.exit_code == 2, result.output
    return result.output


def override_file(root: Path) -> str:
    outside = root.parent / "kubeconfig.yaml"
    outside.write_text("loki: {x: 1}\n", encoding="utf-8")
    target = root / "clusters/h200/overrides/loki/values.yaml"
    target.parent.mkdir(parents=True)
    target.symlink_to(outside)
    return generate(root)


def override_write(root: Path, files: dict[str, str]) -> str:
    """Plant override files and generate (forge.generate.overrides, forge.generate.override_rules)."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return generate(root)


def chart_member(root: Path) -> str:
    from tests.upstream.test_hostile_charts import CASES

    chart = CASES["crd-name-escapes"][0](root.parent)
    (root.parent / "data").mkdir()
    result = CliRunner().invoke(main, ["charts", "bump", "kuberay-operator", "1.7.1", "--chart", str(chart),
                                       "--upstream", str(root.parent / "data"), "--root", str(root)])
    assert result.exit_code == 2, result.output
    return result.output


def chart_folder(root: Path) -> str:
    from tests.upstream.test_chart_folders import CASES

    chart = CASES["values-link-out"][0](root.parent)
    (root.parent / "data").mkdir()
    result = CliRunner().invoke(main, ["charts", "bump", "kuberay-operator", "1.7.1", "--chart", str(chart),
                                       "--upstream", str(root.parent / "data"), "--root", str(root)])
    assert result.exit_code == 2, result.output
    assert list((root.parent / "data").iterdir()) == []
    return result.output


def kustomize_mirror(root: Path) -> str:
    from forge.errors import ForgeError
    from forge.components.base import RemoteBase
    from forge.upstream.remote import RemoteKey, pull_remote
    from tests.upstream.test_hydrated_components import _fake_trainer

    base = _fake_trainer(root.parent / "mirror" / "training-operator-v1.9.4") / "manifests" / "base" / "deployment.yaml"
    base.unlink()
    base.symlink_to(Path.home() / ".kube" / "config")
    key = RemoteKey.of("training-operator", RemoteBase("https://github.com/kubeflow/trainer.git", "v1.9.4", "manifests/overlays/standalone"))
    try:
        pull_remote(root.parent / "cache", key, root.parent / "mirror")
    except ForgeError as exc:
        return str(exc)
    return "copied"


def promote_answer(root: Path) -> str:
    from forge.rollout import api
    from tests.rollout.test_promote_hostile import Server, send

    with Server(lambda h: send(h, b"", 302, Location="http://127.0.0.2:9/steal")) as argocd:
        try:
            api.applications(argocd.url, "a100")
        except api.Unreachable as exc:
            return str(exc)
    return "followed"


PROBES = {
    "journal": lambda root: journal(root, {"entries": [{"target": "../outside", "new": None, "old": ".forge-staging/old/0"}]}),
    "malformed-journal": lambda root: journal(root, [1, 2]),
    "symlink": symlink,
    "special-inventory": special,
    "system-namespace": lambda _: "\n".join(problems(edit(edit(edit(
        H200, "{name: research,", "{name: kube,"), "      research: {flavor", "      kube: {flavor"),
        "{name: development, share_percent: 10}", "{name: system, share_percent: 10}"))),
    "reserved-namespace": lambda _: "\n".join(problems(edit(edit(edit(
        H200, "{name: research,", "{name: ingress,"), "      research: {flavor", "      ingress: {flavor"),
        "{name: staging, share_percent: 10}", "{name: nginx, share_percent: 10}"))),
    "wildcard": lambda _: inventory("repo_url: https://github.com/exa-labs/forge.git", 'repo_url: "https://*"'),
    "default-project": lambda _: inventory("project: forge-h200", "project: default"),
    "shared-project": lambda root: (root / "clusters/a100/inventory.yaml").write_text(
        (root / "clusters/a100/inventory.yaml").read_text().replace("project: forge-a100", "project: forge-h200")) and generate(root),
    "region": lambda _: inventory("    region: us-west-2\n    buckets:", '    region: "us-west-2 -Dx=1"\n    buckets:'),
    "url": lambda _: inventory("endpoint: https://s3.us-west-2", "endpoint: https://me@s3.us-west-2"),
    "credential": lambda _: inventory("  argocd:\n", "  # hf" + "_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567\n  argocd:\n"),
    "lock": lock,
    "disk": disk,
    "nodes": lambda _: inventory("  - name: h200-gpu-18\n", "".join(
        f"  - {{name: n{i}, profile: control-plane, rack: h200-r01, roles: [system]}}\n" for i in range(4990))
        + "  - name: h200-gpu-18\n"),
    "name-length": lambda _: "\n".join(problems(H200.replace("  name: h200\n", f"  name: {'h' * 60}\n", 1))),
    "labels": lambda _: inventory(GPU_18, "".join(f"      exa.ai/l{i}: v\n" for i in range(101)) + GPU_18),
    "mig-label": lambda _: inventory(GPU_18, "      nvidia.com/mig.config: all-disabled\n" + GPU_18),
    "mount": lambda _: inventory("mount: /mnt/nvme3}", "mount: /mnt/../etc}"),
    "upstream-data": upstream_data,
    "data-file": data_file,
    "override-file": override_file,
    "override-guard": lambda root: override_write(root, {
        "clusters/h200/overrides/flyte/values.yaml": "configuration:\n  auth:\n    enabled: false\n"}),
    "stale-exception": lambda root: override_write(root, {
        "clusters/h200/overrides/loki/values.yaml": "loki: {limits_config: {retention_period: 336h}}\n",
        "clusters/h200/overrides/exceptions.yaml": ("exceptions:\n  - {component: loki, path: loki.limits_config, "
                                                    "reason: r, reviewed_by: bob}\n")}),
    "override-rbac": lambda root: override_write(root, {
        "clusters/h200/overrides/external-secrets/crb.yaml": binding("Group", "system:authenticated")}),
    "override-webhook": lambda root: override_write(root, {
        "clusters/h200/overrides/prometheus/webhook.yaml": webhook("url: https://hooks.example.com/mutate")}),
    "override-secret-store": lambda root: override_write(root, {
        "clusters/h200/overrides/external-secrets/patches/store.yaml": STORE + "spec:\n  conditions: null\n"}),
    "override-aggregate": lambda root: override_write(root, {
        "clusters/h200/overrides/external-secrets/values.yaml": "rbac:\n  aggregateToEdit: true\n"}),
    "override-namespace": lambda root: override_write(root, {
        "clusters/h200/overrides/loki/patches/namespace.yaml": NAMESPACE_PRIVILEGED}),
    "override-host-folder": lambda root: override_write(root, {
        "clusters/h200/overrides/alluxio/values.yaml": TIERS.replace("{path}", "/etc")}),
    "chart-member": chart_member,
    "chart-folder": chart_folder,
    "kustomize-mirror": kustomize_mirror,
    "promote-answer": promote_answer,
}


def test_every_class_has_a_row_and_every_row_a_probe():
    assert list(table()) == list(PROBES)


@pytest.mark.parametrize("name", list(PROBES))
def test_each_row_of_the_table_is_refused_as_it_says(name, tmp_path):
    words = table()[name]
    root = copy_repo_inputs(tmp_path / "repo")
    said = PROBES[name](root)
    assert words in said, said
    assert "Traceback" not in said
