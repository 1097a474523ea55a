"""Node tests (forge.components.node_tests): a DCGM diagnostics Job per GPU node, at the level the
inventory names, with the DCGM image the pinned GPU Operator's values pin; on fabric nodes an NCCL
all-reduce per rail against the catalogue's floor; the untested taint that keeps a node out until
they pass, and the release Job that removes it; never synced."""
from __future__ import annotations

import yaml

from forge.facts import hardware
from forge.components.gpu_operator import GpuOperator
from forge.components.node_tests import nccl
from forge.model.cluster import UNTESTED_TAINT_KEY
from tests.helpers import H200_FILE, REPO, edit, fixture_model, inventory_text, line_of, model, problems

UNTESTED = {"key": UNTESTED_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}

KNOB = "      wait_for_completion: {pod_selector: forge.exa.ai/workload, timeout_seconds: 86400}\n"


def _job(cluster: str, node: str) -> dict:
    return yaml.safe_load((REPO / f"overlays/{cluster}/gpu-operator/node-tests/dcgm-{node}.yaml").read_text())


def test_every_whole_gpu_node_has_a_dcgm_diagnostics_job_with_the_pinned_image():
    for name in ("h200", "a100"):
        cluster = model(name)
        tested = [n for n in cluster.gpu_nodes if n.mig_layout in (None, "all-disabled")]
        assert tested
        for node in tested:
            job = _job(name, node.name)
            spec = job["spec"]["template"]["spec"]
            [container] = spec["containers"]
            assert container["image"] == "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"
            assert "dcgmi diag -r 3" in container["command"][-1]
            assert container["resources"]["limits"]["nvidia.com/gpu"] == node.gpu_count
            assert spec["nodeSelector"] == {"kubernetes.io/hostname": node.name} and job["spec"]["backoffLimit"] == 0
            assert job["metadata"]["name"] == f"forge-node-test-dcgm-{node.name}"
        # MIG-split nodes get none: the diagnostics need whole GPUs
        for node in cluster.gpu_nodes:
            assert (REPO / f"overlays/{name}/gpu-operator/node-tests/dcgm-{node.name}.yaml").exists() == (node in tested)
    kustomization = yaml.safe_load((REPO / "overlays/h200/gpu-operator/kustomization.yaml").read_text())
    assert not [r for r in kustomization["resources"] if "node-tests" in r]


def test_the_diagnostics_level_comes_from_the_inventory():
    text = edit(inventory_text("h200"), KNOB, KNOB + "    node_tests: {dcgm_level: 1}\n")
    files = GpuOperator().local_files(model("h200", text))
    dcgm = [j for path, j in files.items() if "/dcgm-" in path]
    assert dcgm and all("dcgmi diag -r 1;" in j["spec"]["template"]["spec"]["containers"][0]["command"][-1] for j in dcgm)


def test_a_diagnostics_level_out_of_range_is_refused_with_its_line():
    text = edit(inventory_text("h200"), KNOB, KNOB + "    node_tests: {dcgm_level: 5}\n")
    [problem] = [p for p in problems(text) if "dcgm_level" in p]
    assert problem.startswith(f"{H200_FILE}:{line_of(text, 'dcgm_level: 5')}: components.gpu-operator.node_tests.dcgm_level:")


def _docs(cluster: str, path: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((REPO / f"overlays/{cluster}/gpu-operator/node-tests/{path}").read_text()) if d]


def test_every_tested_fabric_node_runs_an_nccl_all_reduce_per_rail_against_the_catalogue_floor():
    cluster = model("h200")
    fabric = [n for n in cluster.fabric_nodes if n.tested_before_service]
    assert len(fabric) == 16  # h200-gpu-17 and -18 are MIG-split: no whole GPUs to test
    floor = hardware.catalogue().nccl_floor("H200-141GB", "connectx-7", 400)
    # nccl-tests' maintainers' 46 GB/s per 400G NIC, less AICR's 10 %, at 8 GiB per all-reduce
    assert floor is not None and (floor.busbw_gbytes, floor.shape.message_bytes, floor.shape.iterations) == (41.4, 8 << 30, 20)
    pair = hardware.catalogue().two_node_floor("H200-141GB", "connectx-7", 400, 8)
    assert pair is not None and pair.busbw_gbytes == 250.0  # Google's cluster-health-scanner, A3 Ultra
    for node in fabric:
        service, job = _docs("h200", f"nccl-{node.name}.yaml")
        name = f"forge-node-test-nccl-{node.name}"
        peer = job["metadata"]["labels"]["forge.exa.ai/peer"]
        assert peer != node.name and next(n for n in cluster.nodes if n.name == peer).rack == node.rack
        assert peer not in ("h200-gpu-17", "h200-gpu-18")
        spec, pod = job["spec"], job["spec"]["template"]["spec"]
        assert (spec["completionMode"], spec["completions"], spec["parallelism"], spec["backoffLimit"]) == ("Indexed", 2, 2, 0)
        assert pod["subdomain"] == service["metadata"]["name"] == name and service["spec"]["clusterIP"] == "None"
        [term] = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert term["matchExpressions"][0]["values"] == [node.name, peer]
        [container] = pod["containers"]
        assert container["image"] == "nvcr.io/nvidia/pytorch:25.04-py3"
        assert f"--master-addr={name}-0.{name}" in container["command"][-1] and "--nnodes=2" in container["command"][-1]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert (env["FORGE_RAIL_FLOOR_GBYTES"], env["FORGE_RAIL_MESSAGE_BYTES"], env["FORGE_RAIL_ITERATIONS"]) == (
            "41.4", str(8 << 30), "20")
        assert (env["FORGE_PAIR_FLOOR_GBYTES"], env["FORGE_PAIR_ITERATIONS"]) == ("250", "5")
        assert "/workspace/allreduce.py" in container["command"][-1]
        assert container["resources"]["limits"]["rdma/rdma_network"] == 1 and container["resources"]["limits"]["nvidia.com/gpu"] == 8
        assert {"cpu", "memory"} <= set(container["resources"]["limits"])
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}
        # Its own class, preemptionPolicy Never: never pre-empts a job on the peer. A pod naming no class
        # got system-cluster-critical from forge-infrastructure-priority, which pre-empts (box: busy-node-test).
        assert UNTESTED in pod["tolerations"] and pod["priorityClassName"] == "forge-node-test"
        rails = job["spec"]["template"]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"].split(",")
        assert rails == [f"default/{r.name}" for r in cluster.rails]
    [script] = _docs("h200", "nccl-script.yaml")
    assert "dist.new_group([i, per_node + i])" in script["data"]["allreduce.py"]
    # no compute fabric on a100: no NCCL test there
    assert [p.name for p in (REPO / "overlays/a100/gpu-operator/node-tests").glob("nccl-*")] == ["nccl-script.yaml"]  # the NVLink test's


def test_the_floor_follows_the_node_s_gpu_and_the_infiniband_fabric_sets_its_hcas():
    cluster = fixture_model("ib-small")
    files = GpuOperator().local_files(cluster)
    jobs = [docs[1] for path, docs in files.items() if "/nccl-" in path and "script" not in path]
    assert jobs
    for job in jobs:
        env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["FORGE_RAIL_FLOOR_GBYTES"] == "41.4" and env["NCCL_IB_HCA"].startswith("=")


def test_a_fabric_profile_without_a_catalogued_floor_is_refused_with_its_line():
    text = inventory_text("h200")
    text = edit(text, "      - model: connectx-7\n        count: 8\n        port_gbps: 400",
                "      - model: connectx-7\n        count: 8\n        port_gbps: 200")
    [problem] = [p for p in problems(text) if "NCCL bandwidth floor" in p]
    assert problem.startswith(f"{H200_FILE}:{line_of(text, '- model: connectx-7')}: profiles.sr680a-h200.nics[0].model: ")
    assert "no NCCL bandwidth floor for H200-141GB with connectx-7 at 200 Gb/s" in problem and "add one with its source" in problem


def test_a_catalogue_floor_that_is_not_the_formula_is_refused(tmp_path):
    text = (REPO / "generators/forge/facts/catalogue/hardware.yaml").read_text()
    bad = tmp_path / "hardware.yaml"
    bad.write_text(text.replace("    busbw_gbytes: 41.4\n", "    busbw_gbytes: 45.0\n", 1))
    import pytest
    from forge.files.datafile import DataFileError
    with pytest.raises(DataFileError) as err:
        hardware.load_catalogue(bad, "hardware.yaml")
    [problem] = err.value.problems
    line = text.splitlines().index("    busbw_gbytes: 41.4") + 1
    assert str(problem) == (f"hardware.yaml:{line}: nccl_floors[0].busbw_gbytes: 45.0 is not "
                            "measured_gbytes * (1 - tolerance) = 41.4")


def test_tested_nodes_register_untested_and_only_the_daemonsets_tolerate_it():
    cluster = model("h200")
    for node in cluster.nodes:
        path = REPO / f"overlays/h200/node-feature-discovery/node-join/{node.name}.yaml"
        if not path.exists():
            continue
        join, kubelet = yaml.safe_load_all(path.read_text())
        untested = {"key": UNTESTED_TAINT_KEY, "effect": "NoSchedule"}
        assert (untested in join["nodeRegistration"]["taints"]) == node.tested_before_service
        assert (untested in kubelet["registerWithTaints"]) == node.tested_before_service
    assert any(n.tested_before_service for n in cluster.nodes)
    values = yaml.safe_load((REPO / "overlays/h200/gpu-operator/values.yaml").read_text())
    assert UNTESTED in values["daemonsets"]["tolerations"]
    [policy] = [d for d in yaml.safe_load_all((REPO / "overlays/h200/network-operator/nicclusterpolicy-nic-cluster-policy.yaml").read_text())]
    assert UNTESTED in policy["spec"]["tolerations"]
    assert UNTESTED in cluster.all_node_tolerations  # NFD's worker, node-exporter, Alloy
    assert UNTESTED not in cluster.gpu_tolerations  # Flyte's, JupyterHub's and the examples' pods stay off


def test_the_release_job_may_only_read_the_node_s_tests_and_patch_that_node():
    node = "h200-gpu-01"
    docs = {d["kind"]: d for d in _docs("h200", f"release-{node}.yaml")}
    assert docs["Role"]["rules"] == [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"],
                                      "resourceNames": [f"forge-node-test-dcgm-{node}", f"forge-node-test-nvlink-{node}",
                                                        f"forge-node-test-nccl-{node}"]}]
    assert docs["ClusterRole"]["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"],
                                             "resourceNames": [node]}]
    pod = docs["Job"]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["command"][2:] == [node, UNTESTED_TAINT_KEY, "gpu-operator", f"forge-node-test-dcgm-{node}",
                                        f"forge-node-test-nvlink-{node}", f"forge-node-test-nccl-{node}", "--timeout=21600"]
    assert pod["nodeSelector"] != {"kubernetes.io/hostname": node} and container["resources"]["limits"]
    assert pod["serviceAccountName"] == docs["ServiceAccount"]["metadata"]["name"]
    # a100 has no fabric: its release waits for the diagnostics alone
    a100 = {d["kind"]: d for d in _docs("a100", "release-a100-gpu-01.yaml")}
    assert a100["Role"]["rules"][0]["resourceNames"] == ["forge-node-test-dcgm-a100-gpu-01", "forge-node-test-nvlink-a100-gpu-01"]
    assert nccl.TEST == "nccl"


def test_the_rails_script_is_python_and_reads_the_floor_it_is_given():
    source = _docs("h200", "nccl-script.yaml")[0]["data"]["allreduce.py"]
    compile(source, "allreduce.py", "exec")  # a syntax error would only show on the cluster
    assert 'float(os.environ[f"FORGE_{name}_FLOOR_GBYTES"])' in source and "sys.exit(1 if failed else 0)" in source


def test_every_tested_node_with_a_measured_nvlink_figure_runs_the_in_node_all_reduce():
    for name, gbytes in (("h200", "431"), ("a100", "228")):
        cluster = model(name)
        for node in [n for n in cluster.gpu_nodes if n.tested_before_service]:
            [job] = _docs(name, f"nvlink-{node.name}.yaml")
            pod = job["spec"]["template"]["spec"]
            [container] = pod["containers"]
            env = {e["name"]: e["value"] for e in container["env"]}
            assert (env["FORGE_NODE_FLOOR_GBYTES"], env["FORGE_NODE_MESSAGE_BYTES"]) == (gbytes, str(16 << 30))
            assert f"--nproc-per-node={node.gpu_count} /workspace/allreduce.py" in container["command"][-1]
            assert container["resources"]["limits"]["nvidia.com/gpu"] == node.gpu_count
            assert pod["nodeSelector"] == {"kubernetes.io/hostname": node.name} and UNTESTED in pod["tolerations"]
            assert job["metadata"]["name"] == f"forge-node-test-nvlink-{node.name}" and job["spec"]["backoffLimit"] == 0


def test_a_measured_per_rail_figure_above_the_line_rate_is_refused(tmp_path):
    import pytest
    from forge.files.datafile import DataFileError
    text = (REPO / "generators/forge/facts/catalogue/hardware.yaml").read_text()
    bad = tmp_path / "hardware.yaml"
    bad.write_text(text.replace("    measured_gbytes: 46.0\n    tolerance: 0.1\n    busbw_gbytes: 41.4\n",
                                "    measured_gbytes: 60.0\n    tolerance: 0.1\n    busbw_gbytes: 54.0\n", 1))
    with pytest.raises(DataFileError) as err:
        hardware.load_catalogue(bad, "hardware.yaml")
    [problem] = err.value.problems
    assert str(problem).endswith("nccl_floors[0].measured_gbytes: 60.0 GB/s is above the path's line rate, "
                                 "min(port_gbps, gpu_pcie_gbps) / 8 = 50")


def test_every_floor_in_the_catalogue_names_its_source_and_its_test_shape():
    catalogue = hardware.catalogue()
    for floor in (*catalogue.nccl_floors, *catalogue.nvlink_floors, *catalogue.two_node_floors):
        assert floor.source and floor.shape.message_bytes >= 1 << 30 and floor.shape.iterations >= 5
        # measured, or derived with the formula and said so
        assert floor.measured_gbytes is not None or "derived" in floor.source
