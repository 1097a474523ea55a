"""Reading the upstream reference data (--upstream / FORGE_UPSTREAM: the charts' default values,
values schemas and CRDs) as input that can be damaged: a file cut short by a failed copy, a
binary blob, YAML that does not parse, a "CRD" that is not one.

Without these checks such a file ended in a traceback (exit 1, which forge's contract reads as
"changes found"), or, worse, a CRD cut inside its last version validated the custom resources
against what was left of its schema and blamed the objects ("CRD has no version v1beta2"). Every
problem here is one `error:` line naming the file (and line where there is one), what is wrong
and how to get a good copy back; exit 2.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from forge.errors import ForgeError
from forge.validate.objects import load_yaml_stream

CRD_API = "apiextensions.k8s.io/v1"
REMEDY = ("restore the folder from the chart's release (its README lists the sources), or rewrite "
          "it with `forge charts bump CHART VERSION`")


class UpstreamDataError(ForgeError):
    """A damaged file in the upstream data folder (one message: pickles across forge's workers)."""


def _fail(path: Path, line: int | None, field: str, problem: str) -> UpstreamDataError:
    where = f"{path}:{line}" if line else str(path)
    return UpstreamDataError(f"{where}: {field or '<top>'}: {problem} (upstream data); {REMEDY}")


def read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(path, None, "", f"not UTF-8 text (byte {exc.start}): not a YAML or JSON file") from None
    except OSError as exc:
        raise _fail(path, None, "", f"cannot read it ({exc.strerror})") from None


def yaml_documents(path: Path, text: str | None = None) -> list[dict[str, Any]]:
    """The file's documents, each a mapping (`text`: the file's text, when already read)."""
    text = read_text(path) if text is None else text
    try:
        return load_yaml_stream(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise _fail(path, mark.line + 1 if mark else None, "", f"not valid YAML: {exc.problem or exc}") from None
    except (yaml.YAMLError, ValueError) as exc:
        raise _fail(path, None, "", f"not valid YAML: {str(exc).splitlines()[0]}") from None


def crd_documents(path: Path, text: str | None = None) -> list[dict[str, Any]]:
    """The file's CustomResourceDefinitions, each checked for the shape validation relies on;
    other documents are returned as they are (a chart's CRD folder may hold a stray object)."""
    docs = yaml_documents(path, text)
    for doc in docs:
        if doc.get("kind") == "CustomResourceDefinition":
            problem = crd_problem(doc)
            if problem:
                raise _fail(path, None, *problem)
    return docs


def crd_problem(crd: dict[str, Any]) -> tuple[str, str] | None:
    """(field, what is wrong) for the first thing that makes `crd` unusable, or None."""
    if crd.get("apiVersion") != CRD_API:
        return "apiVersion", f"is {crd.get('apiVersion')!r}, a CRD here is {CRD_API}"
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return "spec", "missing: the file is cut short or not a CRD"
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    for field, value in (("spec.group", spec.get("group")), ("spec.names.kind", names.get("kind")),
                         ("spec.names.plural", names.get("plural"))):
        if not isinstance(value, str) or not value:
            return field, "missing: the file is cut short or not a CRD"
    expected = f"{names['plural']}.{spec['group']}"
    if (crd.get("metadata") or {}).get("name") != expected:
        return "metadata.name", f"is {(crd.get('metadata') or {}).get('name')!r}, the API server requires {expected!r}"
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        return "spec.versions", "missing or empty: the file is cut short"
    return _versions_problem(versions)


def _versions_problem(versions: list[Any]) -> tuple[str, str] | None:
    for i, version in enumerate(versions):
        at = f"spec.versions[{i}]"
        if not isinstance(version, dict) or not isinstance(version.get("name"), str):
            return at, "has no name: the file is cut short"
        for flag in ("served", "storage"):
            if not isinstance(version.get(flag), bool):
                return f"{at}.{flag}", f"missing (version {version['name']}): the file is cut short"
        schema = (version.get("schema") or {}).get("openAPIV3Schema") if isinstance(version.get("schema"), dict) else None
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return f"{at}.schema.openAPIV3Schema", f"missing or not `type: object` (version {version['name']})"
    storage = [v["name"] for v in versions if v["storage"]]
    if len(storage) != 1:
        return "spec.versions", f"{len(storage)} storage versions ({', '.join(storage) or 'none'}); a CRD has exactly one"
    return None
