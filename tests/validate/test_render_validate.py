"""The real kustomize renders the shipped inventory; forge validate checks what it rendered."""
from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from forge.commands.main import main
from forge.render.overlays import render_all


def generate(root: Path) -> None:
    result = CliRunner().invoke(main, ["generate", "--root", str(root)])
    assert result.exit_code == 0, result.output


def test_render_writes_one_file_per_component_and_counts_objects(repo_inputs: Path):
    generate(repo_inputs)
    result = CliRunner().invoke(main, ["render", "--root", str(repo_inputs)])
    assert result.exit_code == 0, result.output
    rendered = repo_inputs / "build/rendered"
    assert sorted(p.relative_to(rendered).as_posix() for p in rendered.rglob("*.yaml")) == [
        "a100/alloy.yaml", "a100/alluxio.yaml", "a100/argocd.yaml", "a100/external-secrets.yaml", "a100/flyte.yaml", "a100/gpu-operator.yaml", "a100/kuberay-operator.yaml", "a100/kueue.yaml", "a100/loki.yaml", "a100/node-feature-discovery.yaml", "a100/prometheus-crds.yaml", "a100/prometheus.yaml", "a100/scheduling.yaml", "a100/training-operator.yaml",
        # the cloud burst cluster (docs/burst.md)
        "h200-burst/alloy.yaml", "h200-burst/argocd.yaml", "h200-burst/efa-device-plugin.yaml", "h200-burst/external-secrets.yaml", "h200-burst/flyte.yaml", "h200-burst/gpu-operator.yaml", "h200-burst/jupyterhub.yaml", "h200-burst/karpenter.yaml", "h200-burst/kuberay-operator.yaml", "h200-burst/kueue.yaml", "h200-burst/loki.yaml", "h200-burst/node-feature-discovery.yaml", "h200-burst/prometheus-crds.yaml", "h200-burst/prometheus.yaml", "h200-burst/scheduling.yaml", "h200-burst/training-operator.yaml",
        "h200/alloy.yaml", "h200/alluxio.yaml", "h200/argocd.yaml", "h200/external-secrets.yaml", "h200/flyte.yaml", "h200/gpu-operator.yaml", "h200/jupyterhub.yaml", "h200/kuberay-operator.yaml", "h200/kueue.yaml", "h200/loki.yaml", "h200/network-operator.yaml", "h200/node-feature-discovery.yaml", "h200/prometheus-crds.yaml", "h200/prometheus.yaml", "h200/scheduling.yaml", "h200/training-operator.yaml",
    ]
    h200 = list(yaml.safe_load_all((rendered / "h200/node-feature-discovery.yaml").read_text()))
    kinds = sorted({o["kind"] for o in h200})
    # its Namespace, one rule per node, and the namespace's NetworkPolicies (deny, same namespace, scrape)
    assert kinds == ["Namespace", "NetworkPolicy", "NodeFeatureRule"] and len(h200) == 1 + 21 + 3
    # kustomize applied our standard labels to every object it built
    for obj in h200:
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "forge"
        assert obj["metadata"]["labels"]["forge.exa.ai/cluster"] == "h200"
    argocd = {o["metadata"]["name"]: o for o in yaml.safe_load_all((rendered / "h200/argocd.yaml").read_text())}
    waves = {name: int(o["metadata"].get("annotations", {}).get("argocd.argoproj.io/sync-wave", 0))
             for name, o in argocd.items() if o["kind"] == "Application" and name != "h200-root"}
    assert waves["h200-node-feature-discovery"] < waves["h200-gpu-operator"]
    assert "h200: 25 objects" in result.output or "h200:" in result.output


def test_validate_passes_on_the_shipped_inventory(repo_inputs: Path, upstream: Path):
    generate(repo_inputs)
    render_all(repo_inputs)
    result = CliRunner().invoke(main, ["validate", "--root", str(repo_inputs), "--upstream", str(upstream)])
    assert result.exit_code == 0, result.output
    assert "0 failures, 0 unchecked" in result.output


def test_without_upstream_custom_resources_are_unchecked_not_passed(repo_inputs: Path):
    generate(repo_inputs)
    render_all(repo_inputs)
    result = CliRunner().invoke(main, ["validate", "--root", str(repo_inputs)], env={"FORGE_UPSTREAM": ""})
    assert result.exit_code == 0, result.output
    assert "unchecked (no upstream data): h200 / node-feature-discovery / nfd.k8s-sigs.io/v1alpha1 NodeFeatureRule x21" in result.output
    assert "unchecked (no upstream data): h200 / gpu-operator / overlays/h200/gpu-operator/values.yaml (values against chart gpu-operator v26.7.0)" in result.output


def test_validate_reports_one_line_per_failure(repo_inputs: Path, upstream: Path):
    generate(repo_inputs)
    # A hand edit of the kind reviewers should never see land: a bad field in a rule, a Secret
    # with data, an unpinned image, a values key the chart does not have.
    rule = repo_inputs / "overlays/h200/node-feature-discovery/nodefeaturerule-forge-node-h200-gpu-01.yaml"
    rule.write_text(rule.read_text().replace("      matchFeatures:", "      matchFeaturez:"))
    (repo_inputs / "overlays/h200/gpu-operator/secret.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s3, namespace: gpu-operator}\ndata: {key: c2VjcmV0}\n")
    (repo_inputs / "overlays/h200/gpu-operator/pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: debug, namespace: gpu-operator}\n"
        "spec: {containers: [{name: c, image: 'busybox:latest'}]}\n")
    kustomization = repo_inputs / "overlays/h200/gpu-operator/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("resources:\n", "resources:\n  - secret.yaml\n  - pod.yaml\n"))
    values = repo_inputs / "overlays/h200/gpu-operator/values.yaml"
    values.write_text(values.read_text().replace("mig:\n  strategy", "mig:\n  stratgey: mixed\n  strategy"))
    render_all(repo_inputs)
    result = CliRunner().invoke(main, ["validate", "--allow-stale", "--root", str(repo_inputs), "--upstream", str(upstream)])
    assert result.exit_code == 1
    fails = sorted(line for line in result.output.splitlines() if line.startswith("FAIL "))
    fence = ("is not in AppProject forge-h200-gpu-operator's namespaceResourceWhitelist: Argo CD would refuse the sync "
             "(declare it in the component's namespaced_kinds if its chart renders it)")
    assert fails == sorted([
        f"FAIL h200 / gpu-operator / Pod/gpu-operator/debug / kind / core/Pod {fence}",
        f"FAIL h200 / gpu-operator / Secret/gpu-operator/s3 / kind / core/Secret {fence}",
        "FAIL h200 / gpu-operator / Pod/gpu-operator/debug / spec.containers[0].image / image 'busybox:latest' uses the 'latest' tag",
        # no priority failure for the classless Pod: forge's infrastructure-priority admission policy
        # binds the gpu-operator namespace (its chart's hook Jobs name no class) and gives it a system class
        "FAIL h200 / gpu-operator / Secret/gpu-operator/s3 / data / Secret carries credentials in Git; reference them (e.g. ExternalSecret) instead",
        "FAIL h200 / gpu-operator / overlays/h200/gpu-operator/values.yaml / mig.stratgey / unknown key 'stratgey' (did you mean 'strategy'? chart default has: strategy)",
        "FAIL h200 / node-feature-discovery / NodeFeatureRule/forge-node-h200-gpu-01 / spec.rules[0].matchFeaturez / unknown field",
    ])


def test_large_renders_are_parsed_in_parallel_with_the_same_result(repo_inputs: Path, monkeypatch):
    from forge.validate import run

    generate(repo_inputs)
    render_all(repo_inputs)
    rendered = repo_inputs / "build/rendered"
    one_process = run.rendered_objects(rendered, ["a100", "h200"])
    monkeypatch.setattr(run, "PARALLEL_PARSE_BYTES", 0)
    assert run.rendered_objects(rendered, ["a100", "h200"]) == one_process
    assert sum(len(objs) for objs in one_process["h200"].values()) > 100


def test_a_cold_run_in_workers_keys_what_it_validated_and_names_a_cluster_not_rendered(repo_inputs: Path, upstream: Path,
                                                                                        monkeypatch):
    """Nothing stored yet: the workers start at once and the keys are computed meanwhile. The
    result is kept under the real keys (the next run replays every cluster) and a cluster with
    nothing rendered is named, exit 2, whichever comes first."""
    import shutil

    from forge.validate import cached

    monkeypatch.setattr(cached, "PARALLEL_CLUSTERS", 1)  # the shipped fleet's three clusters, in workers
    generate(repo_inputs)
    render_all(repo_inputs)
    cold, validated = cached.validate_incremental(repo_inputs, upstream, jobs=2)
    # every object rendered is validated (a count written here went stale with each new object)
    rendered = sum(1 for f in sorted((repo_inputs / "build/rendered").glob("*/*.yaml"))
                   for doc in yaml.safe_load_all(f.read_text(encoding="utf-8")) if doc)
    assert validated == 3 and cold.objects == rendered > 1000 and not cold.failures
    warm, validated = cached.validate_incremental(repo_inputs, upstream, jobs=2)
    assert validated == 0 and warm.per_cluster == cold.per_cluster

    shutil.rmtree(repo_inputs / ".cache" / "forge")
    shutil.rmtree(repo_inputs / "build/rendered/a100")
    result = CliRunner().invoke(main, ["validate", "--root", str(repo_inputs), "--upstream", str(upstream), "--jobs", "2"])
    assert result.exit_code == 2, result.output
    assert "nothing rendered for cluster a100: run `make render` first" in result.output
    assert "Traceback" not in result.output
