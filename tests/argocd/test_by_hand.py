"""What a person applies by hand (forge.argocd.bootstrap.BY_HAND) is what docs/bootstrap.md's step 3 says,
in its order, and the root Application's project is the one the first file defines: the real
Argo CD refuses an Application whose AppProject does not exist (issue 31)."""
from __future__ import annotations

import re

import pytest
import yaml

from forge.argocd.bootstrap import BY_HAND
from forge.files.paths import ARGOCD_DIR, CLUSTERS_DIR
from tests.helpers import REPO

SHIPPED = sorted(p.parent.name for p in (REPO / CLUSTERS_DIR).glob(f"*/{ARGOCD_DIR}"))


def step_3(text: str) -> str:
    """docs/bootstrap.md's step 3, "The root Application, by hand", up to step 4."""
    found = re.search(r"^3\. \*\*The root Application, by hand\*\*(.*?)^4\. ", text, re.M | re.S)
    assert found, "docs/bootstrap.md: no step 3 \"The root Application, by hand\""
    return found.group(1)


def named_in_order(step: str) -> list[str]:
    return re.findall(rf"{CLUSTERS_DIR}/<cluster>/{ARGOCD_DIR}/([\w.-]+\.yaml)", step)


def test_the_shipped_clusters_are_found():
    assert {"a100", "h200", "h200-burst"} <= set(SHIPPED)


@pytest.mark.parametrize("cluster", SHIPPED)
def test_every_by_hand_file_exists(cluster):
    folder = REPO / CLUSTERS_DIR / cluster / ARGOCD_DIR
    assert [n for n in BY_HAND if not (folder / n).is_file()] == []


def test_the_doc_names_them_in_that_order():
    step = step_3((REPO / "docs" / "bootstrap.md").read_text(encoding="utf-8"))
    assert named_in_order(step) == list(BY_HAND)


def test_the_old_doc_fails_the_order_check():
    # The step as it was: the root Application alone, whose project then never exists.
    old = ("3. **The root Application, by hand**:\n"
           "   `kubectl apply -f clusters/<cluster>/argocd/root-application.yaml`.\n4. **The root")
    assert named_in_order(step_3(old)) != list(BY_HAND)


@pytest.mark.parametrize("cluster", SHIPPED)
def test_the_root_project_is_defined_by_the_first_file(cluster):
    folder = REPO / CLUSTERS_DIR / cluster / ARGOCD_DIR
    project = yaml.safe_load((folder / BY_HAND[0]).read_text(encoding="utf-8"))
    root = yaml.safe_load((folder / BY_HAND[-1]).read_text(encoding="utf-8"))
    assert (project["kind"], root["kind"]) == ("AppProject", "Application")
    assert root["spec"]["project"] == project["metadata"]["name"]
    assert root["metadata"]["namespace"] == project["metadata"]["namespace"]
