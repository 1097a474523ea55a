"""The engineers' examples in workflows/: each workflow of workflows/targets.yaml runs locally with
the real flytekit (`pyflyte run FILE WORKFLOW`, the defaults are tiny inputs), in a network
namespace of its own (no network at all; the Ray task's local Ray listens inside it only), and
`forge workflows check` compiles every one and judges each task against the cluster it targets."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from forge.workflows.check import check
from forge.workflows.targets import load_targets

ROOT = Path(__file__).resolve().parents[2]
PYFLYTE = Path(sys.executable).parent / "pyflyte"
RUNS = sorted({(t.file, t.workflow) for t in load_targets(ROOT)})


def run_isolated(*command: str, cwd: Path) -> subprocess.CompletedProcess:
    """COMMAND with no network: `unshare --net` and forge's jail (loopback up), as the box runs
    controllers that cannot be told where to listen."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    return subprocess.run(["unshare", "--net", "--mount", "--", sys.executable, "-m", "forge.twin.jail", "--", *command],
                          cwd=cwd, capture_output=True, text=True, timeout=600)  # a local Ray start took 147 s on a loaded 2-core machine


@pytest.mark.parametrize("file,workflow", RUNS, ids=[f"{f}:{w}" for f, w in RUNS])
def test_each_example_runs_locally(file: str, workflow: str):
    done = run_isolated(str(PYFLYTE), "run", file, workflow, cwd=ROOT / "workflows")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "Running Execution on local." in done.stdout


def test_checkpoints_resume(tmp_path):
    """The shared step resumes from flytekit's checkpoint: a second attempt starts at the step the
    first one saved, not at 0 (as Flyte hands the prior attempt's checkpoint to a retry)."""
    script = tmp_path / "resume.py"
    script.write_text(
        "import sys; sys.path.insert(0, %r)\n" % str(ROOT / "workflows") +
        "import flytekit, common\n"
        "from flytekit.core.checkpointer import SyncCheckpoint\n"
        "from flytekit.core.context_manager import FlyteContextManager\n"
        "import tempfile, os\n"
        "src, dst = tempfile.mkdtemp(), tempfile.mkdtemp()\n"
        "open(os.path.join(src, '_flytecheckpoints'), 'wb').write(b'{\"step\": 30, \"w\": 3.0, \"b\": 0.5}')\n"
        "ctx = FlyteContextManager.current_context()\n"
        "builder = ctx.user_space_params.new_builder()\n"
        "builder.checkpoint = SyncCheckpoint(checkpoint_dest=dst, checkpoint_src=src)\n"
        "params = builder.build()\n"
        "with FlyteContextManager.with_context(ctx.with_execution_state(ctx.execution_state.with_params(user_space_params=params))):\n"
        "    print(common.resume()['step'], common.train(40, 0.1)['step'])\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-2:] == ["30", "40"]


def test_the_shipped_examples_pass_the_check():
    verdict = check(ROOT)
    assert verdict.problems == []
    assert verdict.checked >= 15  # every task of every target, map tasks and Ray included


def _root_with(tmp_path: Path, module: str, code: str, targets: str) -> Path:
    """A repository root with the shipped clusters and versions and one workflow module."""
    for inventory in (ROOT / "clusters").glob("*/inventory.yaml"):
        (tmp_path / "clusters" / inventory.parent.name).mkdir(parents=True)
        shutil.copy(inventory, tmp_path / "clusters" / inventory.parent.name / inventory.name)
    folder = tmp_path / "workflows"
    folder.mkdir()
    shutil.copy(ROOT / "workflows" / "common.py", folder / "common.py")
    (folder / f"{module}.py").write_text(code)
    (folder / "targets.yaml").write_text(targets)
    return tmp_path


BAD = '''
from flytekit import Resources, task, workflow
from flytekitplugins.kfpytorch import Master, PyTorch, Worker
import common

@task(task_config=PyTorch(master=Master(), worker=Worker(replicas=3)), resources=Resources(cpu="96", mem="1024Gi", gpu="8"),
      pod_template_name="forge-gpus", labels={common.QUEUE: "express", common.PRIORITY: "vip"},
      container_image="python:latest")
def train(n: int) -> int:
    return n

@task(resources=Resources(cpu="8", mem="64Gi", gpu="9"), container_image=common.IMAGE)
def too_big(n: int) -> int:
    return n

@workflow
def wf(n: int = 1) -> int:
    return too_big(n=train(n=n))
'''


def test_a_task_the_cluster_cannot_run_fails_naming_task_field_and_cluster(tmp_path):
    root = _root_with(tmp_path, "bad", BAD, "targets:\n  - {file: bad.py, workflow: wf, cluster: h200, project: training, domain: production}\n")
    problems = check(root).problems
    where = "workflows/bad.py: task bad.train on cluster h200 (training-production): "
    assert f"{where}pod_template_name: PodTemplate 'forge-gpus' does not exist in training-production (have: forge-default, forge-efa, forge-rdma)" in problems
    assert f"{where}labels.kueue.x-k8s.io/queue-name: no LocalQueue 'express' in training-production (have: cloud, default)" in problems
    assert any(p.startswith(f"{where}labels.kueue.x-k8s.io/priority-class: no WorkloadPriorityClass 'vip'") for p in problems)
    assert any(p.startswith(f"{where}container_image: python:latest is not an image pinned") for p in problems)
    big = "workflows/bad.py: task bad.too_big on cluster h200 (training-production): resources: 1 replica(s) fit no flavor"
    assert any(p.startswith(big) and "no node holds one main replica" in p for p in problems), problems


def test_multi_node_training_without_the_fabric_is_refused(tmp_path):
    code = BAD.replace('pod_template_name="forge-gpus", labels={common.QUEUE: "express", common.PRIORITY: "vip"},\n      container_image="python:latest"',
                       "container_image=common.IMAGE").replace('gpu="9"', 'gpu="1"')
    root = _root_with(tmp_path, "bad", code, "targets:\n  - {file: bad.py, workflow: wf, cluster: h200, project: training, domain: production}\n"
                      "  - {file: bad.py, workflow: wf, cluster: h200, project: research, domain: development}\n")
    problems = check(root).problems
    assert ["workflows/bad.py: task bad.train on cluster h200 (training-production): resources: multi-node training asks for no "
            "rdma/rdma_network: name the PodTemplate forge-rdma (@task(pod_template_name=\"forge-rdma\")), which carries the compute fabric"] \
        == [p for p in problems if "training-production" in p]


def test_the_cloud_queue_is_judged_against_the_burst_cluster(tmp_path):
    """On h200's cloud queue the job runs on h200-burst: EFA, not h200's RDMA, is what it must ask for."""
    code = (ROOT / "workflows" / "cloud.py").read_text().replace(', "vpc.amazonaws.com/efa": "32"', "")
    root = _root_with(tmp_path, "cloud", code, "targets:\n  - {file: cloud.py, workflow: cloud_train, cluster: h200, project: training, domain: production}\n")
    assert check(root).problems == ["workflows/cloud.py: task cloud.train_in_cloud on cluster h200 (training-production): resources: "
                                    "multi-node training on h200-burst asks for no vpc.amazonaws.com/efa (its nodes' EFA interfaces)"]


def test_a_module_that_does_not_import_is_one_line(tmp_path):
    from forge.errors import ForgeError
    root = _root_with(tmp_path, "broken", "import nothing_by_this_name\n",
                      "targets:\n  - {file: broken.py, workflow: wf, cluster: h200, project: training, domain: production}\n")
    with pytest.raises(ForgeError, match=r"^workflows/broken.py: cannot be imported: ModuleNotFoundError: No module named 'nothing_by_this_name'$"):
        check(root)


def test_the_examples_image_is_the_locked_sdk():
    """The pinned image's flytekit is the flytekit of requirements.lock."""
    import flytekit
    from forge.facts import versions
    assert versions.image("flytekit").tag.endswith(f"-{flytekit.__version__}")
    tree = ast.parse((ROOT / "workflows" / "common.py").read_text())
    image = next(n.value.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "IMAGE")
    assert image == versions.image("flytekit").ref
