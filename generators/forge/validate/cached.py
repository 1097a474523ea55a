"""Incremental, parallel `forge validate`: a cluster whose inputs did not change is not validated
again; the others are validated one cluster per process, each parsing its files once.

A cluster's key (forge.generate.cache.digest) covers everything its result depends on: the validate inputs
shared by all (forge's code, the versions file, the upstream data manifest), the strict-CRD mode,
its inventory (Kubernetes version, enabled components, runtime CRDs, labels), every rendered file
of the cluster (a CRD one component ships checks another's custom resources, so the cluster is
the unit) and the files under overlays/<cluster>/ it reads: the values files and the examples
(VALIDATED_OVERLAY_FILES). The result (failures, warnings, unchecked, counts) is stored
under .cache/forge/validate.json by key; a hit replays it exactly.
"""
from __future__ import annotations

import gc
import os
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from forge.generate.cache import Digests, GlobalInputs, State, digest, tree_digest
from forge.fleet.selection import check_clusters
from forge.errors import ForgeError, InventoryError
from forge.fleet import inventory_paths, load_fleet
from forge.generate.incremental import cluster_keys, registry_key
from forge.files.paths import OVERLAYS_DIR, RENDERED_DIR
from forge.generate.plan_cache import plan_for
from forge.validate.admission import EXAMPLES_DIR
from forge.validate.engine import Report
from forge.validate.failure import Failure
from forge.validate.objects import absent_keys, load_yaml_stream
from forge.workers import process_pool

Progress = Callable[[int, int], None]
_CRDS: dict[tuple[str, str, str], Any] = {}  # per process: upstream CRD index by (root, upstream)


# The overlay files validation reads: forge.validate.run (values.yaml and
# forge.components.base.extra_values_file's) and forge.validate.admission (examples).
VALIDATED_OVERLAY_FILES = ("*/values.yaml", "*/values-*.yaml", f"*/{EXAMPLES_DIR}/*.yaml")


def cluster_key(root: Path, rendered: Path, inventory: Path, shared: str, digests: Digests) -> str:
    name = inventory.parent.name
    files = sorted((rendered / name).glob("*.yaml"))
    if not files:
        raise ForgeError(f"{rendered / name}: nothing rendered for cluster {name}: run `make render` first")
    # Of the overlay, the files validation reads itself: the values files and the examples (the
    # rest reaches it only through the rendered files). Reading all ~300 files of a 100-node
    # cluster's overlay cost, cold, as much as validating it.
    return digest(shared, name, digests.file(inventory), *(f"{p.name}={digests.file(p)}" for p in files),
                  tree_digest(root / OVERLAYS_DIR / name, VALIDATED_OVERLAY_FILES, digests=digests))


def _crds(root: Path, upstream: Path | None, shared: str):
    from forge.validate.run import upstream_crds

    # Keyed on the run's shared inputs (the upstream data's manifest among them): the same folder
    # edited in this process is read again. Computed once per run, by the caller.
    key = (str(root), str(upstream), shared)
    if key not in _CRDS:
        _CRDS[key] = upstream_crds(root, upstream)
    return _CRDS[key]


def forget_crd_indexes() -> None:
    """Drop this process's upstream CRD indexes (forge bench: each cold validation pays for its own)."""
    _CRDS.clear()


def validate_one(args: tuple[str, str, str | None, str, str, str | None]) -> dict[str, Any] | None:
    """One cluster (in a worker): its plan, its rendered objects parsed once, the engine, values.
    None when its inventory has problems (the fleet stage reports them)."""
    # The cluster's objects live until it is done and make no reference cycles: the cyclic
    # collector would only walk them again and again while they are built (~10% of the time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _validate_one(args)
    finally:
        if collecting:
            gc.enable()


def _validate_one(args: tuple[str, str, str | None, str, str, str | None]) -> dict[str, Any] | None:
    from forge.validate.run import check_cluster

    root, inventory, upstream_s, rendered, shared = Path(args[0]), Path(args[1]), args[2], Path(args[3]), args[4]
    upstream = Path(upstream_s) if upstream_s else None
    try:
        plan = plan_for(root, inventory, args[5])
    except InventoryError:
        return None
    texts = {f.stem: f.read_text(encoding="utf-8") for f in sorted((rendered / plan.name).glob("*.yaml"))}
    objects = {stem: load_yaml_stream(text) for stem, text in texts.items()}
    lacks = {stem: absent_keys(text) for stem, text in texts.items()}  # what no walk need look for
    report = Report()
    check_cluster(root, plan.cluster, list(plan.components), objects, _crds(root, upstream, shared), upstream, report, lacks)
    return {"failures": [list(f.__dict__.values()) for f in report.failures],
            "warnings": [list(f.__dict__.values()) for f in report.warnings],
            "unchecked": report.unchecked, "values_files": report.values_files,
            "counts": dict(report.per_cluster.get(plan.name, Counter()))}


def _merge(report: Report, name: str, result: dict[str, Any]) -> None:
    report.failures += [Failure(*f) for f in result["failures"]]
    report.warnings += [Failure(*f) for f in result["warnings"]]
    report.unchecked += result["unchecked"]
    report.values_files += result["values_files"]
    report.per_cluster[name] = Counter(result["counts"])


# Each worker pays for its schemas and CRD parsing once; below this many clusters one process is
# faster than two (the shipped fleet's two clusters).
PARALLEL_CLUSTERS = 4


def _run(jobs_args: list[tuple], jobs: int, progress: Progress | None, fresh: int, total: int,
         meanwhile: Callable[[], Any] = lambda: None) -> tuple[list, Any]:
    """Each cluster's result, and what `meanwhile` returns: the parent runs it while the workers
    validate (one process: before)."""
    results: list = []
    tick = (lambda: progress(fresh + len(results), total)) if progress else (lambda: None)
    tick()
    if jobs <= 1 or len(jobs_args) < PARALLEL_CLUSTERS:
        extra = meanwhile()
        for args in jobs_args:
            results.append(validate_one(args))
            tick()
        return results, extra
    root, upstream, shared = Path(jobs_args[0][0]), jobs_args[0][2], jobs_args[0][4]
    _crds(root, Path(upstream) if upstream else None, shared)  # indexed once here; forked workers inherit it
    with process_pool(min(jobs, len(jobs_args))) as pool:
        running = pool.map(validate_one, jobs_args)  # every cluster is queued at once
        extra = meanwhile()
        for result in running:
            results.append(result)
            tick()
    return results, extra


def validate_incremental(root: Path, upstream: Path | None = None, rendered: Path | None = None,
                         jobs: int | None = None, progress: Progress | None = None,
                         only: tuple[str, ...] = ()) -> tuple[Report, int]:
    """The report of the whole fleet (`only`: of these clusters), and how many clusters were
    validated (not replayed)."""
    import time

    started = time.perf_counter()
    if upstream and not upstream.is_dir():
        raise ForgeError(f"--upstream {upstream}: no such folder")
    rendered = rendered or root / RENDERED_DIR
    paths = inventory_paths(root)
    if not paths:
        load_fleet(root)  # says there is no inventory
    names = [p.parent.name for p in paths]
    check_clusters(only, names)
    paths = [p for p in paths if not only or p.parent.name in only]
    shared = digest(GlobalInputs(root, upstream).validate, registry_key(), "strict" if upstream else "lenient")
    digests = Digests(root, "validate-inputs")
    state_file = State(root, "validate")
    stored: dict[str, dict] = state_file.load().get("clusters", {})

    def all_keys() -> dict[str, str]:
        return {p.parent.name: cluster_key(root, rendered, p, shared, digests) for p in paths}

    # Nothing validated yet (a cold run): every cluster is stale whatever its key, so the workers
    # start at once and the keys their results are kept under are computed meanwhile.
    keys = all_keys() if stored else {}
    stale = [p for p in paths if not stored or stored.get(p.parent.name, {}).get("key") != keys[p.parent.name]]
    plans = cluster_keys(root, stale)  # the plans generate kept (forge.generate.plan_cache)
    args = [(str(root), str(p), str(upstream) if upstream else None, str(rendered), shared, plans[p.parent.name])
            for p in stale]
    results, computed = _run(args, jobs or os.cpu_count() or 1, progress, len(paths) - len(stale), len(paths),
                             meanwhile=dict if stored else all_keys)
    keys = keys or computed
    if any(r is None for r in results):
        load_fleet(root)  # raises with every inventory problem
    for path, result in zip(stale, results):
        stored[path.parent.name] = {"key": keys[path.parent.name], "result": result}
    state_file.save({"clusters": {n: stored[n] for n in names if n in stored}})  # the others' results stay
    digests.save()
    report = Report()
    for name in keys:
        _merge(report, name, stored[name]["result"])
    report.seconds = time.perf_counter() - started
    report.sort()
    return report, len(stale)
