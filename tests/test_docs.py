"""The documentation: a README of at most 200 lines that links its pages, and no broken link in
any markdown file git tracks (relative paths must exist; an #anchor must be a heading there)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def tracked_markdown() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "*.md"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return [REPO / line for line in sorted(set(out.split())) if (REPO / line).is_file()]


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, in_code = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (m := re.match(r"^#{1,6} (.*)$", line)):
            found.add(github_slug(m.group(1)))
    return found


def broken_links(path: Path) -> list[str]:
    broken, in_code = [], False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            goal = (path.parent / file).resolve() if file else path
            where = f"{path.relative_to(REPO)}:{number}: {target}"
            if not goal.exists():
                broken.append(f"{where}: no such file")
            elif anchor and goal.suffix == ".md" and anchor not in anchors(goal):
                broken.append(f"{where}: no heading #{anchor} in {goal.relative_to(REPO)}")
    return broken


def test_no_broken_link_in_any_markdown_file():
    files = tracked_markdown()
    assert REPO / "README.md" in files and len(files) > 10
    assert [b for f in files for b in broken_links(f)] == []


def test_the_checker_finds_a_missing_file_and_a_missing_anchor(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    (tmp_path / "a.md").write_text("# Title\n\n## Two words\n\n[ok](#two-words) [bad](#three) [gone](b.md) `[no](c.md)`\n")
    assert broken_links(tmp_path / "a.md") == ["a.md:5: #three: no heading #three in a.md", "a.md:5: b.md: no such file"]


def test_readme_is_short_and_links_every_docs_page():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    linked = {(REPO / target.partition("#")[0]).resolve() for target in LINK.findall(readme)}
    pages = {p for p in (REPO / "docs").rglob("*.md")}
    unreachable = sorted(str(p.relative_to(REPO)) for p in pages if p not in linked
                         and not any(p in {(q.parent / t.partition("#")[0]).resolve() for t in LINK.findall(q.read_text())}
                                     for q in pages if q != p))
    assert unreachable == [], "docs pages neither the README nor another page links"


@pytest.mark.parametrize("heading, slug", [("Editing nodes: `forge node`", "editing-nodes-forge-node"),
                                           ("kueue: queues, borrowing, fair sharing", "kueue-queues-borrowing-fair-sharing")])
def test_slugs_follow_github(heading, slug):
    assert github_slug(heading) == slug
