"""A folder of CRD files, indexed by (group, kind) without parsing them all.

The upstream data folder holds ~20 MB of CRDs (kube-prometheus-stack's alone are large); parsing
them all costs seconds, while a cluster uses a handful. A cheap text scan finds each file's
`spec.group` and `spec.names.kind`; a file is parsed only when an object needs its CRD. Files the
scan cannot read (several CRDs in one file, unusual layout) are parsed up front.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from forge.validate.crd import CrdSchemas
from forge.validate.upstream_data import crd_documents, read_text

_GROUP = re.compile(r"^  group:\s*['\"]?([A-Za-z0-9.-]+)", re.M)
_KIND = re.compile(r"^    kind:\s*['\"]?([A-Za-z0-9]+)", re.M)
# The literal first, the line start checked behind it: a search for a literal skips ahead fast,
# one anchored at `^` tries every line (10x slower on the ~20 MB of upstream CRDs).
_CRD = re.compile(r"kind:(?<=^kind:)[ \t]*CustomResourceDefinition[ \t]*$", re.M)
_HEAD = 4096


class LazyCrdFolder:
    """`owners` maps an API group to the folder (a chart's data folder) whose CRDs for that group
    win when several charts ship the same CRD (Loki's chart carries an older copy of the
    prometheus-operator CRDs): the chart that really installs them in our clusters."""

    def __init__(self, folders: list[Path], owners: dict[str, Path] | None = None) -> None:
        self._schemas = CrdSchemas()
        self._files: dict[tuple[str, str], Path] = {}
        owners = owners or {}
        for folder in folders:
            for path in sorted(p for p in folder.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()):
                text = read_text(path)
                head = text[:_HEAD]  # spec.group and spec.names come before the (large) versions
                groups, kinds = _GROUP.findall(head), _KIND.findall(head)
                if len(_CRD.findall(text)) == 1 and len(groups) == 1 and len(kinds) == 1:
                    key = (groups[0], kinds[0])
                    owner = owners.get(groups[0])
                    if key not in self._files or owner is None or path.is_relative_to(owner):
                        self._files[key] = path
                else:
                    self._schemas.add_objects(crd_documents(path, text))

    def validate(self, obj: dict[str, Any]) -> list[tuple[str, str]] | None:
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        path = self._files.pop((api_version.rpartition("/")[0], kind), None)
        if path is not None:  # first use: parse and compile it
            self._schemas.add_objects(crd_documents(path))
        return self._schemas.validate(obj)
