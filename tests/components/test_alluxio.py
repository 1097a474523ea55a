"""Alluxio: NVMe tier paths and quotas per node profile, memory tier, write/read policy mapping,
masters, the S3 endpoint, and one rejection per bad input (message and file:line)."""
from __future__ import annotations

import pytest
from tests.helpers import (edit, generated, generated_dir, inventory_file, inventory_text, line_of, model,
                                only_problem, problems_of, rendered)

from forge.components.alluxio import (WRITE_POLICY_PROPERTIES, Alluxio, AlluxioSettings, ssd_quota_gib, tier_layout,
                                      tier_levels)

GIB = 2**30


def values(cluster: str) -> dict:
    return generated(f"overlays/{cluster}/alluxio/values.yaml")


def settings(cluster: str, text: str | None = None) -> AlluxioSettings:
    return Alluxio().settings(model(cluster, text))


# ---- tiers ----------------------------------------------------------------------------------------

def test_ssd_quota_formula():
    # floor(size_gb * 10^9 * (1 - reserve) / 2^30)
    assert ssd_quota_gib(3200, 0.1) == 2682  # 2.88e12 B = 2682.2 GiB
    assert ssd_quota_gib(3840, 0.1) == 3218  # 3.456e12 B = 3218.6 GiB
    assert ssd_quota_gib(3200, 0) == 2980  # 3.2e12 B = 2980.2 GiB
    assert ssd_quota_gib(1000, 0.9) == 93  # 1e11 B = 93.1 GiB: 0.9 kept exact (no 0.8999... float)


@pytest.mark.parametrize("cluster, mounts, quota", [
    ("h200", ["/mnt/nvme0", "/mnt/nvme1", "/mnt/nvme2", "/mnt/nvme3"], "2682GB"),  # 4 x 3200 GB
    ("a100", ["/mnt/nvme0", "/mnt/nvme1"], "3218GB"),  # 2 x 3840 GB
])
def test_ssd_tier_uses_exactly_the_profile_mounts(cluster, mounts, quota):
    m = model(cluster)
    profile_mounts = {tuple(d.mount for d in n.nvme) for n in m.nvme_nodes}
    assert profile_mounts == {tuple(mounts)}  # the inventory's own NVMe list
    ssd = values(cluster)["tieredstore"]["levels"][1]
    assert ssd["alias"] == "SSD" and ssd["type"] == "hostPath"
    assert ssd["path"].split(",") == mounts
    assert ssd["mediumtype"].split(",") == ["SSD"] * len(mounts)
    assert ssd["quota"].split(",") == [quota] * len(mounts)


@pytest.mark.parametrize("cluster, gib", [
    ("h200", 64),  # 2048 GiB x 0.05 = 102 GiB, capped at 64
    ("a100", 51),  # 1024 GiB x 0.05 = 51.2 GiB, under the cap
])
def test_memory_tier_from_node_ram_within_cap(cluster, gib):
    mem = values(cluster)["tieredstore"]["levels"][0]
    assert (mem["alias"], mem["path"], mem["type"]) == ("MEM", "/dev/shm", "emptyDir")
    assert mem["quota"] == str(gib * GIB)
    worker = values(cluster)["worker"]["resources"]
    assert worker["limits"]["memory"] == str((gib + 20) * GIB)  # tier + the worker JVM's 20 GiB


TWO_PROFILES = """  control-plane:
    server: generic-1u"""
# A second GPU profile with the same mount paths but smaller devices, used by one node.
SMALL_PROFILE = """  sr680a-h200-small:
    server: lenovo-sr680a-v3
    cpu_threads: 192
    memory_gib: 1024
    gpu: {model: H200-141GB, count: 8, nvlink: 4}
    nvme:
      - {device: /dev/nvme0n1, size_gb: 1600, mount: /mnt/nvme0}
      - {device: /dev/nvme1n1, size_gb: 1600, mount: /mnt/nvme1}
      - {device: /dev/nvme2n1, size_gb: 1600, mount: /mnt/nvme2}
      - {device: /dev/nvme3n1, size_gb: %s, mount: /mnt/nvme3}
"""


def _with_small_profile(last_size: str = "1600", mounts_changed: bool = False) -> str:
    profile = SMALL_PROFILE % last_size
    if mounts_changed:
        profile = profile.replace("mount: /mnt/nvme3}", "mount: /mnt/nvme9}")
    text = edit(inventory_text("h200"), TWO_PROFILES, profile + TWO_PROFILES)
    return edit(text, "  - name: h200-gpu-18\n    profile: sr680a-h200\n", "  - name: h200-gpu-18\n    profile: sr680a-h200-small\n")


def test_each_nvme_profile_gets_a_worker_pool_with_every_drive_at_its_own_size():
    # The chart has one worker DaemonSet per release: profiles whose tiers differ get a release
    # each, so no drive is cut down to the smallest one of the cluster (issue 12).
    text = _with_small_profile(last_size="3200")
    m = model("h200", text)
    alluxio = Alluxio()
    facts = alluxio.facts(m)
    assert [(p.profile, p.release) for p in facts.pools] == [("sr680a-h200", "alluxio"), ("sr680a-h200-small", "alluxio-sr680a-h200-small")]
    main, small = facts.pools
    assert [(d.path, d.quota_gib) for d in main.layout.ssd] == [(f"/mnt/nvme{i}", 2682) for i in range(4)]  # 3200 GB
    assert [d.quota_gib for d in small.layout.ssd] == [1341, 1341, 1341, 2682]  # 1600 GB x 3, 3200 GB
    assert (main.layout.memory_bytes, small.layout.memory_bytes) == (64 * GIB, 51 * GIB)  # 2048 and 1024 GiB RAM
    assert small.nodes == ("h200-gpu-18",) and "h200-gpu-18" not in main.nodes
    assert facts.layout == main.layout == tier_layout(m, alluxio.settings(m))
    # The main release serves the first pool only; the second is a worker-only release.
    v = alluxio.values(m)
    assert v["worker"]["nodeSelector"] == {"forge.exa.ai/nvme": "true", "forge.exa.ai/profile": "sr680a-h200"}
    assert v["proxy"]["nodeSelector"] == {"forge.exa.ai/nvme": "true"}  # proxies on every cache node
    extra = alluxio.extra_releases(m)
    assert list(extra) == ["alluxio-sr680a-h200-small"]
    pool = extra["alluxio-sr680a-h200-small"]
    assert pool["fullnameOverride"] == "alluxio-sr680a-h200-small"
    assert pool["master"] == {"enabled": False, "count": 3} and pool["proxy"] == {"enabled": False}
    assert pool["worker"]["nodeSelector"] == {"forge.exa.ai/nvme": "true", "forge.exa.ai/profile": "sr680a-h200-small"}
    assert pool["tieredstore"]["levels"] == tier_levels(small.layout)
    assert pool["tieredstore"]["levels"][1]["quota"] == "1341GB,1341GB,1341GB,2682GB"
    assert pool["worker"]["resources"]["limits"]["memory"] == str((51 + 20) * GIB)
    # Its workers join the main release's masters, whatever name the chart derives from its own.
    assert pool["properties"]["alluxio.master.embedded.journal.addresses"] == (
        "alluxio-master-0:19200,alluxio-master-1:19200,alluxio-master-2:19200")
    assert pool["properties"]["alluxio.master.rpc.addresses"] == "alluxio-master-0:19998,alluxio-master-1:19998,alluxio-master-2:19998"
    assert {k: pool["properties"][k] for k in v["properties"]} == v["properties"]
    assert "master" not in pool["secrets"] and pool["secrets"]["worker"] == v["secrets"]["worker"]


def test_nvme_profiles_with_one_layout_keep_one_release_on_every_nvme_node():
    # Same paths, sizes and RAM on a second profile: one pool, no profile in the selector.
    text = edit(_with_small_profile(last_size="3200"), "size_gb: 1600", "size_gb: 3200", count=3)
    text = edit(text, "    memory_gib: 1024\n    gpu: {model: H200-141GB", "    memory_gib: 2048\n    gpu: {model: H200-141GB")
    m = model("h200", text)
    facts = Alluxio().facts(m)
    assert [(p.profile, p.release) for p in facts.pools] == [(None, "alluxio")]
    assert len(facts.pools[0].nodes) == 18
    assert Alluxio().extra_releases(m) == {}
    assert Alluxio().values(m)["worker"]["nodeSelector"] == {"forge.exa.ai/nvme": "true"}


def test_workers_run_on_the_nvme_nodes_only():
    for cluster in ("h200", "a100"):
        m = model(cluster)
        v = values(cluster)
        assert v["worker"]["nodeSelector"] == {"forge.exa.ai/nvme": "true"}
        assert v["proxy"]["nodeSelector"] == {"forge.exa.ai/nvme": "true"}
        assert {n.name for n in m.nvme_nodes} == {n.name for n in m.gpu_nodes}  # in these fleets
        # Not an inventory label (issue 22 item 9): NFD sets it where the probe finds the drives mounted.
        assert not any("forge.exa.ai/nvme" in n.labels for n in m.nodes)
        assert all(Alluxio().node_features(m, n) == {"local.feature": {"forge-nvme-mounted": "true"}} for n in m.nvme_nodes)
        assert not any(Alluxio().node_features(m, n) for n in m.nodes if not n.nvme)
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in v["worker"]["tolerations"]


# ---- policies ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("policy", ["CACHE_THROUGH", "ASYNC_THROUGH"])
def test_write_policy_mapping(policy):
    props = WRITE_POLICY_PROPERTIES[policy]
    assert props["alluxio.user.file.writetype.default"] == policy
    assert props["alluxio.proxy.s3.writetype"] == policy  # S3 clients write through the proxy
    # Only the asynchronous policy keeps a second cached copy until the upload is done.
    assert props.get("alluxio.user.file.replication.durable") == ("2" if policy == "ASYNC_THROUGH" else None)


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_write_and_read_policy_per_cluster_from_the_inventory(cluster):
    s = settings(cluster)
    assert s.write_policy == "CACHE_THROUGH"
    props = values(cluster)["properties"]
    for key, value in WRITE_POLICY_PROPERTIES["CACHE_THROUGH"].items():
        assert props[key] == value
    assert props["alluxio.user.file.readtype.default"] == s.read_policy == "CACHE"


def mount_script(cluster: str) -> str:
    job = generated(f"overlays/{cluster}/alluxio/job-alluxio-mount-buckets.yaml")
    return job["spec"]["template"]["spec"]["containers"][0]["command"][-1]


def test_a100_checkpoints_and_flyte_metadata_write_synchronously_datasets_asynchronously():
    # issue 22 item 8: the proxy-wide ASYNC_THROUGH covered exa-ml-checkpoints-a100 and
    # exa-flyte-a100; the proxy's one write type is now the synchronous one, and each bucket has its
    # own write type as Alluxio path configuration.
    props = values("a100")["properties"]
    assert props["alluxio.proxy.s3.writetype"] == "CACHE_THROUGH"
    assert props["alluxio.user.file.replication.durable"] == "2"  # datasets still write asynchronously
    script = mount_script("a100")
    conf = "/opt/alluxio/bin/alluxio fsadmin pathConf add --property alluxio.user.file.writetype.default="
    for bucket, policy in (("exa-ml-checkpoints-a100", "CACHE_THROUGH"), ("exa-flyte-a100", "CACHE_THROUGH")):
        assert f"{conf}{policy} /{bucket}\n" in script
        assert script.index(f"s3://{bucket}/") < script.index(f"{conf}{policy} /{bucket}")  # after its mount
    # issue 21 (frontdoor, docs/security.md): the training data is mounted read-only, so nothing writes
    # to it through Alluxio and the mount Job sets no write type for it.
    assert "/opt/alluxio/bin/alluxio fs mount --readonly /exa-ml-datasets s3://exa-ml-datasets/" in script
    assert not any(line.startswith(conf) and line.endswith(" /exa-ml-datasets") for line in script.splitlines())
    assert model("a100").settings.s3.durable == ["checkpoints", "flyte"]


def test_proxy_is_asynchronous_only_when_every_bucket_is():
    text = edit(inventory_text("h200"), "    durable: [checkpoints, flyte]\n", "")
    text = edit(text, "write_policy: CACHE_THROUGH", "write_policy: ASYNC_THROUGH")
    assert Alluxio().values(model("h200", text))["properties"]["alluxio.proxy.s3.writetype"] == "ASYNC_THROUGH"
    text = edit(text, "    read_policy: CACHE ", "    write_policies: {flyte: CACHE_THROUGH}\n    read_policy: CACHE ")
    assert Alluxio().values(model("h200", text))["properties"]["alluxio.proxy.s3.writetype"] == "CACHE_THROUGH"


def test_rejects_an_asynchronous_default_on_a_durable_bucket():
    # a100 as it was on main: ASYNC_THROUGH for every bucket, checkpoints and flyte durable.
    text = edit(inventory_text("a100"), "    write_policies: {outputs: ASYNC_THROUGH}\n", "")
    text = edit(text, "write_policy: CACHE_THROUGH", "write_policy: ASYNC_THROUGH")
    found = [p for p in problems_of("a100", text) if p.path == "components.alluxio.write_policy"]
    assert [(p.file, p.line) for p in found] == [(inventory_file("a100"), line_of(text, "write_policy: ASYNC_THROUGH"))] * 2
    assert found[0].message == (
        "bucket 'checkpoints' (exa-ml-checkpoints-a100) is durable (cluster.s3.durable): ASYNC_THROUGH returns before "
        "the write is in S3 and a worker restart loses it; set components.alluxio.write_policies.checkpoints: "
        "CACHE_THROUGH (a durable bucket allows only CACHE_THROUGH)")
    assert "bucket 'flyte' (exa-flyte-a100) is durable" in found[1].message


def test_rejects_an_asynchronous_policy_of_a_durable_bucket_of_its_own():
    text = edit(inventory_text("a100"), "{outputs: ASYNC_THROUGH}", "{outputs: ASYNC_THROUGH, checkpoints: ASYNC_THROUGH}")
    p = only_problem(problems_of("a100", text), "components.alluxio.write_policies.checkpoints")
    assert (p.file, p.line) == (inventory_file("a100"), line_of(text, "checkpoints: ASYNC_THROUGH}"))
    assert "is durable (cluster.s3.durable)" in p.message


def test_rejects_a_write_policy_of_an_unlisted_bucket():
    text = edit(inventory_text("a100"), "{outputs: ASYNC_THROUGH}", "{loki: ASYNC_THROUGH}")
    p = only_problem(problems_of("a100", text), "components.alluxio.write_policies.loki")
    assert p.message == "'loki' is not one of components.alluxio.buckets (have: datasets, checkpoints, flyte, outputs)"
    assert p.line == line_of(text, "{loki: ASYNC_THROUGH}")


def test_rejects_a_write_policy_spelled_informally_per_bucket():
    text = edit(inventory_text("a100"), "{outputs: ASYNC_THROUGH}", "{outputs: async}")
    p = only_problem(problems_of("a100", text), "components.alluxio.write_policies.outputs")
    assert "did you mean ASYNC_THROUGH?" in p.message


def test_rejects_a_durable_key_that_is_no_bucket():
    text = edit(inventory_text("h200"), "durable: [checkpoints, flyte]", "durable: [checkpoints, models]")
    p = only_problem(problems_of("h200", text), "cluster.s3.durable[1]")
    assert p.message == "unknown bucket 'models' (expected one of: alluxio-backups, checkpoints, datasets, flyte, loki)"
    assert (p.file, p.line) == (inventory_file("h200"), line_of(text, "durable: [checkpoints, models]"))


def test_changing_the_policy_in_the_inventory_changes_the_values():
    text = edit(inventory_text("h200"), "    durable: [checkpoints, flyte]\n", "")  # no durable bucket
    text = edit(text, "write_policy: CACHE_THROUGH", "write_policy: ASYNC_THROUGH")
    text = edit(text, "read_policy: CACHE ", "read_policy: NO_CACHE ")
    v = Alluxio().values(model("h200", text))
    assert v["properties"]["alluxio.proxy.s3.writetype"] == "ASYNC_THROUGH"
    assert v["properties"]["alluxio.user.file.readtype.default"] == "NO_CACHE"


# ---- under-store, credentials, masters, endpoint ------------------------------------------------------

@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_s3_under_store_and_credentials_by_reference(cluster):
    m = model(cluster)
    v = values(cluster)
    assert v["properties"]["alluxio.underfs.s3.endpoint"] == m.settings.s3.endpoint
    assert v["properties"]["alluxio.underfs.s3.endpoint.region"] == m.settings.s3.region
    secret = m.settings.s3.credentials_secret
    assert v["secrets"] == {"master": {secret: "s3"}, "worker": {secret: "s3"}}
    assert v["master"]["env"]["AWS_CREDENTIAL_PROFILES_FILE"] == "/secrets/s3/credentials"
    dumped = str(v).lower()
    assert "aws_secret_access_key" not in dumped and "secretkey" not in dumped and "accesskeyid" not in dumped
    # Each listed bucket is mounted at /<bucket name> after every sync.
    job = next(o for o in generated_dir(f"overlays/{cluster}/alluxio") if o["kind"] == "Job")
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    for key in settings(cluster).buckets:
        bucket = m.settings.s3.buckets[key]
        read_only = "--readonly " if key == "datasets" else ""  # training data read-only (issue 21 item 3)
        assert f"fs mount {read_only}/{bucket} s3://{bucket}/" in script
    assert m.settings.s3.buckets["loki"] not in script


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_masters_embedded_journal_one_per_control_plane_rack(cluster):
    m = model(cluster)
    v = values(cluster)
    assert v["journal"]["type"] == "EMBEDDED"
    assert v["master"]["count"] == 3 and v["master"]["count"] % 2 == 1
    assert v["master"]["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    # on the pod network (issue 21 item 5): one per node by forge's admission policy, so one per rack
    assert v["master"]["hostNetwork"] is False
    racks = [n.rack for n in m.control_plane_nodes]
    assert len(set(racks)) == len(racks) >= v["master"]["count"]


def test_s3_endpoint_service_selects_the_proxies():
    objs = rendered("h200", "alluxio")
    svc = next(o for o in objs if o["kind"] == "Service" and o["metadata"]["name"] == "alluxio-s3")
    assert svc["spec"]["selector"] == {"app": "alluxio", "release": "alluxio", "role": "alluxio-proxy"}
    assert svc["spec"]["ports"][0]["port"] == 39999
    assert values("h200")["proxy"]["enabled"] is True


# ---- rejections -------------------------------------------------------------------------------------------

def test_rejects_reserve_outside_0_to_0_9():
    text = edit(inventory_text("h200"), "ssd_reserve: 0.1", "ssd_reserve: 0.95")
    p = only_problem(problems_of("h200", text), "components.alluxio.ssd_reserve")
    assert (p.file, p.line) == (inventory_file("h200"), line_of(text, "ssd_reserve: 0.95"))
    assert "ssd_reserve 0.95 is outside 0-0.9" in p.message
    text = edit(inventory_text("h200"), "ssd_reserve: 0.1", "ssd_reserve: -0.1")
    assert "outside 0-0.9" in only_problem(problems_of("h200", text), "components.alluxio.ssd_reserve").message


def test_rejects_an_nvme_mount_referenced_twice():
    text = edit(inventory_text("h200"), "size_gb: 3200, mount: /mnt/nvme1}", "size_gb: 3200, mount: /mnt/nvme0}")
    p = only_problem(problems_of("h200", text), "profiles.sr680a-h200.nvme[1].mount")
    assert p.message == "NVMe mount path '/mnt/nvme0' listed twice (also at nvme[0])"
    assert (p.file, p.line) == (inventory_file("h200"), line_of(text, "/dev/nvme1n1"))


def test_rejects_an_nvme_mount_inside_another():
    text = edit(inventory_text("a100"), "mount: /mnt/nvme1}", "mount: /mnt/nvme0/cache}")
    p = only_problem(problems_of("a100", text), "profiles.as-4124go-a100.nvme[1].mount")
    assert p.message == "NVMe mount '/mnt/nvme0/cache' lies inside mount '/mnt/nvme0': the cache would count that space twice"
    assert p.line == line_of(text, "/mnt/nvme0/cache")


def test_rejects_a_bucket_name_s3_would_refuse():
    text = edit(inventory_text("h200"), "datasets: exa-ml-datasets", "datasets: Exa_ML_Datasets")
    p = only_problem(problems_of("h200", text), "cluster.s3.buckets.datasets")
    assert p.message == ("bucket name 'Exa_ML_Datasets' may hold only lower-case letters, digits, dots and hyphens, "
                         "and must start and end with a letter or digit")
    assert (p.file, p.line) == (inventory_file("h200"), line_of(text, "Exa_ML_Datasets"))
    text = edit(inventory_text("a100"), "flyte: exa-flyte-a100", "flyte: 10.0.0.1")
    p = only_problem(problems_of("a100", text), "cluster.s3.buckets.flyte")
    assert p.message == "bucket name '10.0.0.1' must not be formatted as an IP address"
    assert p.line == line_of(text, "flyte: 10.0.0.1")


def test_rejects_a_bucket_key_the_cluster_does_not_have():
    text = edit(inventory_text("h200"), "buckets: [datasets, checkpoints, flyte]", "buckets: [datasets, checkpionts, flyte]")
    p = only_problem(problems_of("h200", text), "components.alluxio.buckets[1]")
    assert p.message == "'checkpionts' is not a bucket of cluster.s3.buckets (have: alluxio-backups, checkpoints, datasets, flyte, loki)"
    assert p.line == line_of(text, "checkpionts")


def test_rejects_an_even_number_of_masters():
    text = edit(inventory_text("h200"), "masters: 3 ", "masters: 2 ")
    p = only_problem(problems_of("h200", text), "components.alluxio.masters")
    assert p.message == "2 masters: the embedded journal needs an odd number, at least 3, to keep a quorum when one fails"
    assert p.line == line_of(text, "masters: 2")


def test_rejects_more_masters_than_control_plane_nodes():
    text = edit(inventory_text("a100"), "masters: 3 ", "masters: 5 ")
    p = only_problem(problems_of("a100", text), "components.alluxio.masters")
    assert p.message == "5 masters need as many control-plane nodes (one master each); the inventory has 3"
    assert p.line == line_of(text, "masters: 5")


def test_rejects_control_plane_nodes_sharing_a_rack():
    text = edit(inventory_text("h200"), "  - name: h200-cp-02\n    profile: control-plane\n    rack: h200-r02",
                "  - name: h200-cp-02\n    profile: control-plane\n    rack: h200-r01")
    p = only_problem(problems_of("h200", text), "nodes[1].rack")
    assert p.message == ("control-plane nodes h200-cp-01 and h200-cp-02 share rack 'h200-r01': "
                         "Alluxio masters run one per control-plane node and must not share a rack")
    assert p.line == line_of(text, "rack: h200-r01", nth=2)


def test_nvme_profiles_with_different_mounts_each_cache_on_their_own():
    # Refused before issue 12 ("one DaemonSet with one tier layout"): now a pool each.
    text = _with_small_profile(mounts_changed=True)
    m = model("h200", text)
    small = Alluxio().facts(m).pools[1]
    assert [d.path for d in small.layout.ssd] == ["/mnt/nvme0", "/mnt/nvme1", "/mnt/nvme2", "/mnt/nvme9"]


def test_rejects_a_profile_name_too_long_for_its_worker_release():
    long_name = "sr680a-h200-small-with-a-name-far-too-long-for-helm"
    text = _with_small_profile().replace("sr680a-h200-small", long_name)
    p = only_problem(problems_of("h200", text), f"profiles.{long_name}")
    assert p.message == (f"profile name '{long_name}' is too long for its Alluxio worker release 'alluxio-{long_name}' "
                         "(Helm allows 53 characters): shorten it")
    assert p.line == line_of(text, f"  {long_name}:")


def test_rejects_a_memory_fraction_over_half():
    text = edit(inventory_text("h200"), "{fraction: 0.05, max_gib: 64}", "{fraction: 0.6, max_gib: 64}")
    p = only_problem(problems_of("h200", text), "components.alluxio.memory_tier.fraction")
    assert p.message == "input should be less than or equal to 0.5"
    assert p.line == line_of(text, "fraction: 0.6")


@pytest.mark.parametrize("given, meant", [("sync", "CACHE_THROUGH"), ("async", "ASYNC_THROUGH"),
                                          ("Async", "ASYNC_THROUGH"), ("cache_through", "CACHE_THROUGH")])
def test_rejects_the_other_write_policy_spelling_and_names_the_right_one(given, meant):
    # One vocabulary (Alluxio's write types) in schema, docs and errors.
    text = edit(inventory_text("h200"), "write_policy: CACHE_THROUGH", f"write_policy: {given}")
    p = only_problem(problems_of("h200", text), "components.alluxio.write_policy")
    assert (p.file, p.line) == (inventory_file("h200"), line_of(text, f"write_policy: {given}"))
    assert p.message == (f"write_policy '{given}': write policies use Alluxio's write types; did you mean {meant}? "
                         "(expected one of: CACHE_THROUGH, ASYNC_THROUGH)")


def test_readme_and_schema_name_the_same_write_policies():
    from typing import get_args

    from tests.helpers import REPO
    section = (REPO / "docs/components/alluxio.md").read_text()
    literal = get_args(AlluxioSettings.model_fields["write_policy"].annotation)
    assert set(literal) == set(WRITE_POLICY_PROPERTIES) == {"CACHE_THROUGH", "ASYNC_THROUGH"}
    for policy in literal:
        assert f"`{policy}`" in section
    assert "`sync` ->" not in section and "sync|async" not in section


# ---- the NVMe label from what is mounted (issue 22 item 9) -------------------------------------------

def probe_of(cluster: str, profile: str) -> dict:
    return generated(f"overlays/{cluster}/alluxio/daemonset-alluxio-nvme-probe-{profile}.yaml")


def test_the_nvme_label_comes_from_an_nfd_rule_on_the_probes_local_feature():
    rule = generated("overlays/h200/alluxio/nodefeaturerule-forge-nvme-mounted.yaml")["spec"]["rules"]
    assert rule == [{"name": "forge-nvme-mounted", "labels": {"forge.exa.ai/nvme": "true"},
                     "matchFeatures": [{"feature": "local.feature",
                                        "matchExpressions": {"forge-nvme-mounted": {"op": "IsTrue"}}}]}]
    for cluster in ("h200", "a100"):  # and no per-node inventory rule sets it any more
        for doc in generated_dir(f"overlays/{cluster}/node-feature-discovery", "nodefeaturerule-"):
            assert "forge.exa.ai/nvme" not in doc["spec"]["rules"][0]["labels"]


@pytest.mark.parametrize("cluster, profile, mounts", [
    ("h200", "sr680a-h200", ["/mnt/nvme0", "/mnt/nvme1", "/mnt/nvme2", "/mnt/nvme3"]),
    ("a100", "as-4124go-a100", ["/mnt/nvme0", "/mnt/nvme1"]),
])
def test_the_probe_checks_every_mount_of_the_profile_with_mountpoint(cluster, profile, mounts):
    ds = probe_of(cluster, profile)
    pod = ds["spec"]["template"]["spec"]
    # Placed by the inventory's profile label, never by the label it decides.
    assert pod["nodeSelector"] == {"forge.exa.ai/profile": profile}
    script = pod["containers"][0]["command"][-1]
    assert " && ".join(f"mountpoint -q /host{m}" for m in mounts) in script
    assert "then state=true; else state=false; fi" in script
    features = "/host/etc/kubernetes/node-feature-discovery/features.d"
    assert f"printf '# +no-label\\nforge-nvme-mounted=%s\\n' \"$state\" > {features}/.forge-nvme.tmp" in script
    assert f"mv {features}/.forge-nvme.tmp {features}/forge-nvme" in script
    # The host's /mnt read-only with the host's later mounts propagated: mountpoint compares devices.
    mount = next(v for v in pod["containers"][0]["volumeMounts"] if v["mountPath"] == "/host/mnt")
    assert mount["readOnly"] is True and mount["mountPropagation"] == "HostToContainer"
    assert {"name": mount["name"], "hostPath": {"path": "/mnt", "type": "Directory"}} in pod["volumes"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]


def test_the_probe_runs_a_real_shell_against_real_mount_points(tmp_path):
    """The generated script under bash, with mountpoint itself: a folder that is no mount point
    makes the feature false; the root of a real filesystem (/proc is one) makes it true."""
    import shutil
    import subprocess

    from forge.components.alluxio.nvme_probe import probe_script
    if not shutil.which("mountpoint"):
        pytest.skip("util-linux mountpoint not installed")
    for path, want in (("/proc", "true"), (str(tmp_path), "false")):
        script = probe_script([path]).replace("/host", "").replace("while true; do", "for once in 1; do")
        features = tmp_path / "features.d"
        features.mkdir(exist_ok=True)
        script = script.replace("/etc/kubernetes/node-feature-discovery/features.d", str(features)).replace("sleep 30", ":")
        subprocess.run(["bash", "-c", script], check=True, timeout=30)
        assert (features / "forge-nvme").read_text() == f"# +no-label\nforge-nvme-mounted={want}\n"


def test_the_probe_is_live_while_it_rewrites_the_feature_file_and_dead_once_it_stopped(tmp_path):
    """The generated liveness and readiness commands under bash: a feature file written just now is
    live and ready; one last written ten minutes ago (a loop hung on a dead mount) is not live."""
    import os
    import subprocess
    import time

    from forge.components.alluxio.nvme_probe import FEATURE_FILE, FEATURES_DIR, HOST
    daemonset = next(o for o in Alluxio().manifests(model("h200")) if o["kind"] == "DaemonSet")
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    folder = tmp_path / "features.d"
    folder.mkdir()

    def run(probe: str) -> int:
        command = [c.replace(f"{HOST}{FEATURES_DIR}", str(folder)) for c in container[probe]["exec"]["command"]]
        return subprocess.run(command, timeout=30).returncode

    assert run("readinessProbe") != 0  # nothing written yet: not ready
    (folder / FEATURE_FILE).write_text("# +no-label\nforge-nvme-mounted=true\n")
    assert run("livenessProbe") == 0 and run("readinessProbe") == 0
    stale = time.time() - 600
    os.utime(folder / FEATURE_FILE, (stale, stale))
    assert run("livenessProbe") != 0


def test_rejects_an_asynchronous_policy_on_the_read_only_training_data():
    """Issue 33: a100 once declared datasets ASYNC_THROUGH while mounting it read-only: no write path at all."""
    text = edit(inventory_text("a100"), "{outputs: ASYNC_THROUGH}", "{datasets: ASYNC_THROUGH}")
    p = only_problem(problems_of("a100", text), "components.alluxio.write_policies.datasets")
    assert (p.file, p.line) == (inventory_file("a100"), line_of(text, "{datasets: ASYNC_THROUGH}"))
    assert p.message.startswith("bucket 'datasets' (exa-ml-datasets) is mounted read-only (the training data): ASYNC_THROUGH writes nothing there")


def test_the_re_creatable_outputs_are_written_asynchronously_and_the_durable_buckets_not():
    job = generated("overlays/a100/alluxio/job-alluxio-mount-buckets.yaml")
    script = "\n".join(job["spec"]["template"]["spec"]["containers"][0]["command"])
    conf = "/opt/alluxio/bin/alluxio fsadmin pathConf add --property alluxio.user.file.writetype.default="
    assert f"{conf}ASYNC_THROUGH /exa-ml-outputs-a100" in script
    assert f"{conf}CACHE_THROUGH /exa-ml-checkpoints-a100" in script and f"{conf}CACHE_THROUGH /exa-flyte-a100" in script
