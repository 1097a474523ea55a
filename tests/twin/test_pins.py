"""The box's pins agree with the builder modules that build them, and etcd is the one Kubernetes
is tested with (no box needed, nothing built)."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from forge.errors import ForgeError
from forge.twin.pins import box_pins
from tests.helpers import REPO


def _required(go_mod: str) -> dict[str, str]:
    """module -> version of every `require` line, direct or indirect."""
    found = re.findall(r"^\s*(?:require\s+)?([a-z0-9.\-]+\.[a-z]+/\S+)\s+(v\S+)", go_mod, re.M)
    return dict(found)


def test_every_builder_module_requires_the_pinned_version_of_its_module():
    pins = box_pins(REPO)
    built = [p for p in pins.programs + pins.optional if p.builder]
    assert {p.name for p in built} >= {"kubernetes", "etcd"}
    for program in built:
        required = _required((REPO / program.builder / "go.mod").read_text(encoding="utf-8"))
        assert required.get(program.module) == program.version, (program.builder, program.module)


def test_etcd_is_built_from_its_server_module_with_its_siblings_at_the_same_version():
    etcd = box_pins(REPO).program("etcd")
    assert etcd.module == "go.etcd.io/etcd/server/v3" and etcd.binary(".") == "etcd"
    assert etcd.package(".") == etcd.module
    assert etcd.version.startswith("v3.6.")
    required = _required((REPO / etcd.builder / "go.mod").read_text(encoding="utf-8"))
    siblings = {m: v for m, v in required.items() if m.startswith("go.etcd.io/etcd/")}
    assert set(siblings) >= {"go.etcd.io/etcd/api/v3", "go.etcd.io/etcd/client/pkg/v3", "go.etcd.io/etcd/client/v3",
                             "go.etcd.io/etcd/pkg/v3", "go.etcd.io/etcd/server/v3"}
    assert set(siblings.values()) == {etcd.version}


def test_other_programs_keep_the_binary_name_go_gives_them():
    pins = box_pins(REPO)
    assert pins.program("training-operator").binary("cmd/training-operator.v1") == "training-operator.v1"
    assert pins.program("kubernetes").package("cmd/kube-apiserver") == "k8s.io/kubernetes/cmd/kube-apiserver"


def test_argocd_is_built_only_on_request_with_the_go_its_module_needs():
    """Argo CD v3.6 needs Go 1.27: its build alone sets GOTOOLCHAIN, and `forge twin run` never builds it."""
    pins = box_pins(REPO)
    argocd = pins.program("argocd-box")
    assert argocd not in pins.programs and argocd in pins.optional
    assert argocd.binary("cmd") == "argocd" and argocd.package("cmd") == "github.com/argoproj/argo-cd/v3/cmd"
    go_line = next(line for line in (REPO / argocd.builder / "go.mod").read_text(encoding="utf-8").splitlines()
                   if line.startswith("go "))
    wanted = tuple(int(x) for x in go_line.split()[1].split(".")[:2])
    have = tuple(int(x) for x in argocd.go_toolchain.removeprefix("go").split(".")[:2])
    assert have >= wanted > pins.go_min, (argocd.go_toolchain, go_line)


def test_the_box_runs_the_karpenter_forge_deploys_only_on_request():
    """twin.karpenter-box is the Karpenter charts/versions.yaml deploys (image and chart), with the
    kwok cloud provider's main package, and `forge twin run` never builds it."""
    import yaml

    pins = box_pins(REPO)
    karpenter = pins.program("karpenter-box")
    assert karpenter not in pins.programs and karpenter in pins.optional
    assert karpenter.package("kwok") == "sigs.k8s.io/karpenter/kwok" and karpenter.binary("kwok") == "kwok"
    versions = yaml.safe_load((REPO / "charts" / "versions.yaml").read_text(encoding="utf-8"))
    deployed = {versions["images"]["karpenter"]["tag"], versions["charts"]["karpenter"]["version"]}
    assert deployed == {karpenter.version.lstrip("v")}, (deployed, karpenter.version)


@pytest.mark.parametrize("change, field", [
    (lambda twin: twin.update(kueue=None), "twin.kueue"),
    (lambda twin: twin["etcd"].update(module=["x"]), "twin.etcd.module"),
    (lambda twin: twin["kwok"].update(commands="kwok"), "twin.kwok.commands"),
    (lambda twin: twin["cyclonus"].update(keep=[1]), "twin.cyclonus.keep"),
])
def test_a_malformed_box_pin_is_one_error_naming_the_field(tmp_path, change, field):
    """Found by tests/fuzz/test_fuzz_datafiles.py: `twin.kueue: null` was an AttributeError traceback."""
    shutil.copytree(REPO / "charts", tmp_path / "charts")
    tools = json.loads((REPO / "ci/tools.json").read_text())
    change(tools["twin"])
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci/tools.json").write_text(json.dumps(tools))
    with pytest.raises(ForgeError) as caught:
        box_pins(tmp_path)
    assert str(caught.value).startswith(f"ci/tools.json: {field}: must be ") and "\n" not in str(caught.value)


def test_argo_cds_repo_server_gets_a_standalone_kustomize_of_the_pinned_line(tmp_path):
    """The repo server runs `kustomize edit add label` for the training-operator's commonLabels; the
    kubectl shim of tools/bin refuses every verb but build and version (seen in the box:
    ComparisonError '... only build and version are supported'). twin.kustomize-box is a standalone
    kustomize of the line ci/tools.json kustomize.version_prefix pins, linked first on the
    components' PATH, built only on request."""
    import json

    from forge.twin.argocd.components import link_names

    pins = box_pins(REPO)
    kustomize = pins.program("kustomize-box")
    assert kustomize not in pins.programs and kustomize in pins.optional
    assert kustomize.package(".") == "sigs.k8s.io/kustomize/kustomize/v5" and kustomize.binary(".") == "kustomize"
    line = json.loads((REPO / "ci" / "tools.json").read_text(encoding="utf-8"))["kustomize"]["version_prefix"]
    assert kustomize.version.startswith(line + "."), (kustomize.version, line)
    argocd, built = tmp_path / "argocd", tmp_path / "kustomize"
    (tmp_path / "data" / "hack").mkdir(parents=True)
    (tmp_path / "data" / "hack" / "git-verify-wrapper.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    for f in (argocd, built):
        f.write_text("", encoding="utf-8")
    links = link_names(argocd, tmp_path / "bin", built)
    assert links["kustomize"].resolve() == built and links["argocd-repo-server"].resolve() == argocd
