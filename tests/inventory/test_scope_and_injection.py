"""Issue 26, scope and injection: an inventory cannot widen what forge's output may reach (a
system namespace, a wildcard in an AppProject, the `default` project, one project for two
clusters), and each free string is what its consumer accepts. Every row fails on the code
before these checks: the value was copied into generated files."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from forge.commands.main import main
from tests.helpers import H200_FILE, copy_repo_inputs, edit, inventory_text, line_of, problems

H200 = inventory_text("h200")

# (id, old text, new text, path of the problem, words the message must hold)
ROWS = [
    ("flyte-kube-public", "{name: staging, share_percent: 10}", "{name: public, share_percent: 10}",
     "components.flyte.projects[3].name", "Kubernetes'"),
    ("flyte-kube-prefix", "{name: staging, share_percent: 10}", "{name: dns, share_percent: 10}",
     "components.flyte.projects[3].name", "Kubernetes'"),
    ("flyte-component-namespace", "{name: staging, share_percent: 10}", "{name: secrets, share_percent: 10}",
     "components.flyte.projects[3].name", "component external-secrets's"),
    ("argocd-server-wildcard", "  argocd:\n    project: forge-h200\n",
     "  argocd:\n    project: forge-h200\n    destination: {server: \"*\"}\n", "cluster.argocd.destination.server", "glob"),
    ("git-repo-wildcard", "repo_url: https://github.com/exa-labs/forge.git", "repo_url: \"https://*\"",
     "cluster.git.repo_url", "glob"),
    ("git-repo-userinfo-token", "repo_url: https://github.com/exa-labs/forge.git",
     "repo_url: https://0123456789abcdef0123456789abcdef01234567@github.com/exa-labs/forge.git",
     "cluster.git.repo_url", None),  # the credential scanner's, first: "a URL with a token as its user name"
    ("argocd-project-default", "project: forge-h200", "project: default", "cluster.argocd.project", "Argo CD's own project"),
    ("s3-region-space", "    region: us-west-2\n    buckets:", "    region: us-west-2 -Dalluxio.evil=1\n    buckets:",
     "cluster.s3.region", "not a region"),
    ("s3-region-newline", "    region: us-west-2\n    buckets:", "    region: \"us-west-2\\n-Dx=1\"\n    buckets:",
     "cluster.s3.region", "not a region"),
    ("s3-endpoint-userinfo", "endpoint: https://s3.us-west-2.amazonaws.com",
     "endpoint: https://me@s3.us-west-2.amazonaws.com", "cluster.s3.endpoint", "user name or password"),
    ("s3-endpoint-security-token", "endpoint: https://s3.us-west-2.amazonaws.com",
     "endpoint: https://s3.us-west-2.amazonaws.com/?X-Amz-Security-Token=FwoGZXIvYXdzEBYaDM", "cluster.s3.endpoint",
     "query"),
    ("s3-endpoint-bad-host", "endpoint: https://s3.us-west-2.amazonaws.com", "endpoint: https://s3_bad_host/",
     "cluster.s3.endpoint", "not a hostname"),
    ("store-region", "      provider: aws\n      region: us-west-2", "      provider: aws\n      region: \"us-west-2 x\"",
     "components.external-secrets.store", "not a region"),
    ("db-host", "host: flyte-h200.db.exa.internal", "host: \"flyte-h200.db -c evil\"",
     "components.flyte.database.host", "not a hostname"),
    ("db-options-password", "      password_secret: flyte-db\n",
     "      password_secret: flyte-db\n      options: sslmode=require password=hunter2hunter2\n",
     "components.flyte.database.options", "credential"),
    ("grafana-url-userinfo", "grafana_url: https://grafana.h200.exa.internal",
     "grafana_url: https://admin:pw@grafana.h200.exa.internal", "components.flyte.grafana_url", None),
]


@pytest.mark.parametrize("old,new,path,words", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_scope_and_injection_rows_are_refused_with_file_line(old, new, path, words):
    text = edit(H200, old, new)
    text = text.replace("{name: research,", "{name: kube,").replace("      research: {flavor", "      kube: {flavor")
    if "secrets, share" in text:
        text = text.replace("{name: kube,", "{name: external,").replace("      kube: {flavor", "      external: {flavor")
    found = problems(text)
    mine = [p for p in found if f": {path}" in p]
    assert mine, found
    assert mine[0].startswith(f"{H200_FILE}:")
    if words:
        assert words in mine[0], mine[0]
    assert "hunter2" not in "".join(found) and "0123456789abcdef01234567" not in "".join(found)


def test_flyte_kube_system_names_the_namespace_and_what_is_allowed():
    text = edit(edit(edit(H200, "{name: research,", "{name: kube,"), "      research: {flavor", "      kube: {flavor"),
                "{name: development, share_percent: 10}", "{name: system, share_percent: 10}")
    p = next(p for p in problems(text) if "'kube-system'" in p)
    assert p.startswith(f"{H200_FILE}:{line_of(text, '{name: kube,')}: components.flyte.projects[3].name")
    assert "Kubernetes'" in p and "rename the project" in p


@pytest.mark.parametrize("url", ["ssh://git@github.com/exa-labs/forge.git", "git@github.com:exa-labs/forge.git",
                                 "https://github.com/exa-labs/forge.git", "https://git.example:8443/forge"])
def test_plain_git_urls_are_still_accepted(url):
    from forge.inventory.strings import git_url

    assert git_url(url) == url


def test_two_clusters_cannot_share_an_argocd_project(tmp_path: Path):
    root = copy_repo_inputs(tmp_path / "repo")
    a100 = root / "clusters/a100/inventory.yaml"
    text = a100.read_text()
    a100.write_text(text.replace("project: forge-a100", "project: forge-h200"))
    result = CliRunner().invoke(main, ["generate", "--root", str(root)])
    assert result.exit_code == 2, result.output
    line = line_of(text, "project: forge-a100")
    assert (f"clusters/h200/inventory.yaml:{line}: cluster.argocd.project: Argo CD project 'forge-h200' is also cluster "
            f"'a100''s (clusters/a100/inventory.yaml:{line})") in result.output
    assert not (root / "overlays").exists()


def test_a_shared_project_is_found_by_an_incremental_generate_too(tmp_path: Path):
    """The other cluster fresh (not rebuilt): the fleet-wide names its state remembers say it."""
    root = copy_repo_inputs(tmp_path / "repo")
    assert CliRunner().invoke(main, ["generate", "--root", str(root)]).exit_code == 0
    a100 = root / "clusters/a100/inventory.yaml"
    a100.write_text(a100.read_text().replace("project: forge-a100", "project: forge-h200-bootstrap"))
    result = CliRunner().invoke(main, ["generate", "--root", str(root)])
    assert result.exit_code == 2 and "Argo CD project 'forge-h200-bootstrap' is also cluster 'a100''s" in result.output, result.output
