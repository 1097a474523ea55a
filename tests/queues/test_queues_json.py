"""`forge queues CLUSTER -o json` (issue 24, wall 7): the text report's figures in a versioned shape."""
from __future__ import annotations

import json

from tests.helpers import REPO, cli


def test_queues_json_has_the_text_report_s_figures(clusters):
    result = cli("queues", "h200", "-o", "json", "--root", str(REPO))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["kind"] == "forge.queues" and doc["version"] == 1 and doc["cluster"] == "h200"
    facts = clusters["h200"].component_facts["kueue"]
    assert [f["flavor"] for f in doc["flavors"]] == [p.flavor for p in facts.capacity.pools]
    assert [p["project"] for p in doc["projects"]] == [q.project for q in facts.quotas]
    # Every nominal quota of the text report is in the document.
    training = next(p for p in doc["projects"] if p["project"] == "training")
    gpus = training["flavors"]["h200-141gb"]["nvidia.com/gpu"]
    assert gpus["nominal"] == next(q for q in facts.quotas if q.project == "training").flavors["h200-141gb"]["nvidia.com/gpu"].nominal
    assert sum(p["flavors"]["h200-141gb"]["nvidia.com/gpu"]["nominal"] for p in doc["projects"]) == 128
