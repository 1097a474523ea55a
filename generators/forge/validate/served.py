"""Plug-in: every object forge's output gives a cluster is of an API that cluster's API server
serves (forge.facts.kube_apis: the upstream defaults of its Kubernetes version and what its inventory's
cluster.api_server turns on; a managed control plane, none). Any other is refused at its sync (the
server has no such kind) and stops every later wave: a failure here, naming the inventory fact.
Kinds of groups the API server does not build in are CRDs', checked against their schemas."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forge.facts.kube_apis import Served
from forge.validate.failure import Failure
from forge.validate.objects import object_id


@dataclass(frozen=True)
class ServedApis:
    served: Served

    def __call__(self, report: Any, cluster: str, component: str, objects: list[dict[str, Any]]) -> None:
        for obj in objects:
            api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
            why = self.served.missing(api_version, kind)
            if why:
                report.failures.append(Failure(cluster, component, object_id(obj), "apiVersion",
                                               f"the cluster does not serve {api_version} {kind}: {why} ({self.served.source})"))
