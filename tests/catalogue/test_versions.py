"""One versions file (charts/versions.yaml) holds everything forge pins: no version literal in the
Python, the docs' component table agrees with the file, and a bad file is refused with its
file:line."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from forge.facts import versions as pins
from forge.commands.main import main
from forge.components import COMPONENTS
from forge.files.datafile import DataFileError
from forge.errors import ForgeError
from tests.helpers import REPO, copy_repo_inputs

PACKAGE = REPO / "generators" / "forge"
COMPONENT_TABLE = REPO / "docs" / "components" / "README.md"
# A dotted three-part version (1.2.3, v26.4.1, 580.95.05, doca3.4.1) or an image reference with a
# tag (quay.io/x/y:v1.7.0, registry.k8s.io/pause:3.10). IP addresses are not versions.
PINNED = re.compile(r"(?<![\d.])\d+\.\d+\.\d+(?![\d.])|\b[\w.-]+(?:/[\w.-]+)+:[\w.-]*\d[\w.-]*")
# RFC 2606 names stand for no real image (synthetic fleets, examples).
EXAMPLE = re.compile(r"\bexample\.(com|org|net)\b")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def version_literals(source: str) -> list[tuple[int, str]]:
    """String literals (not docstrings or comments, which may cite the version a fact was read
    from) that look like a pinned version."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            out += [(node.lineno, m.group(0)) for m in PINNED.finditer(node.value) if not EXAMPLE.search(node.value)]
    return out


def test_no_version_literal_is_left_in_the_python():
    found = [f"{path.relative_to(REPO)}:{line}: {text}"
             for path in sorted(PACKAGE.rglob("*.py")) for line, text in version_literals(path.read_text())]
    assert found == [], "pin these in charts/versions.yaml and read them through forge.facts.versions"


@pytest.mark.parametrize("literal", ['TAG = "v1.7.0"', 'IMAGE = "quay.io/kuberay/operator:v1.7.0"',
                                     'x = f"registry.k8s.io/pause:3.10"', 'DRIVER = {"ampere": "580.95.05"}',
                                     'DOCA = "doca3.4.1-26.04-1.1.0.0-1"'])
def test_the_scan_finds_pinned_looking_literals(literal):
    assert version_literals(literal) != []


@pytest.mark.parametrize("literal", ['"""Alluxio 2.9.6, as a docstring."""', "ADDR = '0.0.0.0:12345'", 'K8S = "1.34"',
                                     'API = "nv-ipam.nvidia.com/v1alpha1"', 'URL = "http://alluxio.svc:39999/api/v1/s3"',
                                     'x = f"registry.example.com/team/app:1.{i}.0"'])
def test_the_scan_leaves_other_strings_alone(literal):
    assert version_literals(literal) == []


# ---- the component table (docs/components/README.md) ------------------------------------------

VERSION_TOKEN = re.compile(r"(?<![\w.])v?\d+(?:\.\d+)+(?![\w.])")


def component_table(readme: str) -> dict[str, list[str]]:
    section = readme.split("# Components\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith(("| component", "|---"))]
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in row.strip("|").split("|")] for row in rows)}


def table_problems(readme: str, versions: pins.Versions) -> list[str]:
    """Where the docs' component table and the versions file (and the registry) disagree."""
    table = component_table(readme)
    problems = [f"{name}: no row in the table" for name in sorted({c.name for c in COMPONENTS} - set(table))]
    problems += [f"{name}: not a component" for name in sorted(set(table) - {c.name for c in COMPONENTS})]
    pinned = ({c.version for c in versions.charts.values()} | {i.tag for i in versions.images.values()}
              | {s.ref for s in versions.sources.values()})
    for component in COMPONENTS:
        if component.name not in table:
            continue
        source, namespace, wave = table[component.name]
        if component.chart:
            pin = versions.charts[component.chart]
            if f"chart {pin.chart} {pin.version}" not in source:
                problems.append(f"{component.name}: source should name chart {pin.chart} {pin.version}")
        if component.name in versions.sources and f"at tag {versions.sources[component.name].ref}" not in source:
            problems.append(f"{component.name}: source should say at tag {versions.sources[component.name].ref}")
        problems += [f"{component.name}: {token} is pinned nowhere in charts/versions.yaml"
                     for token in VERSION_TOKEN.findall(source) if token not in pinned]
        if wave != str(component.sync_wave):
            problems.append(f"{component.name}: sync wave {wave}, the component says {component.sync_wave}")
        if not namespace.startswith("(") and namespace != component.namespace:
            problems.append(f"{component.name}: namespace {namespace}, the component says {component.namespace}")
    return problems


def test_the_readme_component_table_agrees_with_the_versions_file():
    assert table_problems(COMPONENT_TABLE.read_text(), pins.versions(REPO)) == []


@pytest.mark.parametrize(("old", "new", "problem"), [
    ("chart node-feature-discovery 0.19.0", "chart node-feature-discovery 0.18.0",
     "node-feature-discovery: source should name chart node-feature-discovery 0.19.0"),
    ("Grafana Alloy v1.18.1", "Grafana Alloy v1.18.0", "alloy: v1.18.0 is pinned nowhere in charts/versions.yaml"),
    ("at tag v1.9.4", "at tag v1.9.3", "training-operator: source should say at tag v1.9.4"),
    ("| loki | chart loki 7.3.0 | loki | 50 |\n", "", "loki: no row in the table"),
])
def test_a_stale_readme_table_is_caught(old, new, problem):
    readme = COMPONENT_TABLE.read_text()
    assert old in readme, f"the component table changed: {old!r} not found"
    assert problem in table_problems(readme.replace(old, new, 1), pins.versions(REPO))


# ---- the file's own checks ---------------------------------------------------------------------

def broken_root(tmp_path: Path, old: str, new: str) -> tuple[Path, str]:
    root = copy_repo_inputs(tmp_path / "repo")
    path = root / pins.VERSIONS_FILE
    text = path.read_text()
    assert old in text, f"the versions file changed: {old!r} not found"
    path.write_text(text.replace(old, new, 1))
    return root, path.read_text()


def line_of(text: str, needle: str) -> int:
    return text.count("\n", 0, text.index(needle)) + 1


@pytest.mark.parametrize(("old", "new", "needle", "problem"), [
    ('tag: "3.10"', "tag: 3.10", "tag: 3.10", "images.flyte-pod-template.tag: input should be a valid string"),
    ("tag: v1.18.1", "tag: latest", "tag: latest", "images.alloy.tag: 'latest' pins nothing: give a version tag"),
    ("tag: v1.7.0\n", "tag: v1.6.0\n", "tag: v1.6.0",
     "images.kuberay-operator.tag: 'v1.6.0' does not carry chart kuberay-operator's version 1.7.0: bump the image with the chart"),
    ("  ampere: 580.95.05", "  ampere: 580.95.05\n  turing: r570", "turing", "gpu_drivers.turing: string should match pattern"),
    ("    ref: v1.9.4", "    ref: v1.9.4\n    branch: main", "branch: main", "sources.training-operator.branch: unknown key"),
])
def test_a_bad_versions_file_is_refused_with_file_line_and_key(tmp_path, old, new, needle, problem):
    root, text = broken_root(tmp_path, old, new)
    with pytest.raises(DataFileError) as caught:
        pins.chart_pins(root)  # its cache is keyed on the file as it is now: this one is read
    [found] = [str(p) for p in caught.value.problems]
    assert found.startswith(f"charts/versions.yaml:{line_of(text, needle)}: {problem}"), found


def test_the_cli_refuses_a_bad_versions_file_with_exit_2_and_writes_nothing(tmp_path):
    root, text = broken_root(tmp_path, "tag: v1.18.1", "tag: latest")
    result = CliRunner().invoke(main, ["generate", "--root", str(root)])
    assert result.exit_code == 2, result.output
    assert f"error: charts/versions.yaml:{line_of(text, 'tag: latest')}: images.alloy.tag:" in result.output
    assert not (root / "overlays").exists()


def test_asking_for_something_not_pinned_names_the_file_and_the_key():
    with pytest.raises(ForgeError, match=r"^charts/versions.yaml: images.nope: not pinned \(have: doca-driver, "):
        pins.image("nope")
    with pytest.raises(ForgeError, match=r"^charts/versions.yaml: gpu_drivers.kepler: not pinned \(have: ampere, "):
        pins.gpu_driver("kepler")
