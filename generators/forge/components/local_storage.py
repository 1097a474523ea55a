"""A component's own data path on its nodes: a local-path StorageClass per component.

Prometheus, Alertmanager, Loki and the Alluxio journal claim node-local volumes on the control
plane (or system) nodes. With the cluster's one `local-path` class they all share the folder the
provisioner was installed with, on the root disk etcd uses. A component's `data_path` (an absolute
folder on its nodes, normally a disk of its own) makes forge write a StorageClass of its own,
`forge-local-<volume>`, for rancher's local-path provisioner with `parameters.nodePath: <data_path>`
(the provisioner's per-class path), and the component's claims name it. The provisioner serves a
`nodePath` only when its configuration lists it (`nodePathMap` of the `local-path-config`
ConfigMap, which forge does not manage): add the path there for the nodes concerned.

Without `data_path` the output is what it was: the component's `storage_class`, else
`cluster.storage_class`. Both at once is refused (which class would the claims name?).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Iterator

from pydantic import AfterValidator

from forge.components.base import storage_class

if TYPE_CHECKING:
    from forge.errors import Problem
    from forge.inventory.loader import LoadedInventory
    from forge.model.cluster import ClusterModel

PROVISIONER = "rancher.io/local-path"
CLASS_PREFIX = "forge-local-"


SYSTEM_FOLDERS = frozenset({"/proc", "/sys", "/dev", "/run", "/etc", "/boot", "/usr", "/bin", "/sbin", "/lib", "/var", "/tmp"})


def _data_path(value: str) -> str:
    if (not re.fullmatch(r"(/[A-Za-z0-9._-]+)+", value) or any(p in (".", "..") for p in value.split("/"))
            or value in SYSTEM_FOLDERS):
        raise ValueError(f"data_path '{value}' is not a folder for volumes: an absolute path such as /data/prometheus "
                         "(letters, digits, '.', '_', '-' between slashes), not / nor a system folder")
    return value


DataPath = Annotated[str, AfterValidator(_data_path)]


def class_name(volume: str) -> str:
    return f"{CLASS_PREFIX}{volume}"


def chosen_class(cluster: "ClusterModel", override: str | None, data_path: str | None, volume: str) -> str:
    """The class a component's claims name: its own local-path class when it has a data path."""
    return class_name(volume) if data_path else storage_class(cluster, override)


def storage_class_object(volume: str, data_path: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": class_name(volume)},
        "provisioner": PROVISIONER,
        "parameters": {"nodePath": data_path},
        # Bound where the pod is scheduled (the volume is that node's folder), deleted with its claim
        # (the provisioner's own default class does the same).
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Delete",
    }


def objects(paths: dict[str, str | None]) -> list[dict[str, Any]]:
    """The StorageClass of each volume (name -> data path) that has a data path."""
    return [storage_class_object(volume, path) for volume, path in paths.items() if path]


def conflict(loaded: "LoadedInventory", at: tuple, override: str | None, data_path: str | None,
             class_field: str, volume: str) -> "Iterator[Problem]":
    if override and data_path:
        yield loaded.problem(at, f"both {class_field} '{override}' and data_path: data_path makes forge's own class "
                                 f"{class_name(volume)} on that folder; keep one of them")
