"""forge.pod_scripts.node_release: the release Job's script removes the untested taint once, and only once,
every test Job of the node has passed; a failed test keeps it."""
from __future__ import annotations

from forge.pod_scripts import node_release

KEY = "forge.exa.ai/untested"
JOBS = ["forge-node-test-dcgm-n1", "forge-node-test-nccl-n1"]


def _job(condition: str | None) -> dict:
    return {"status": {"conditions": [{"type": condition, "status": "True"}] if condition else []}}


class Api:
    """The API server's answers for one run: Job states over time, the node, and the patches sent."""

    def __init__(self, states: list[dict[str, str | None]]):
        self.states, self.patches, self.polls = states, [], 0
        self.node = {"metadata": {"name": "n1", "resourceVersion": "42"},
                     "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}, {"key": KEY, "effect": "NoSchedule"}]}}

    def __call__(self, method: str, path: str, body):
        if method == "PATCH":
            self.patches.append((path, body))
            return {}
        if path.startswith("/api/v1/nodes/"):
            return self.node
        name = path.rsplit("/", 1)[1]
        state = self.states[min(self.polls // len(JOBS), len(self.states) - 1)].get(name)
        self.polls += 1
        return None if state == "missing" else _job(state)


def _run(api: Api, timeout: float = 3600) -> int:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    return node_release.release("n1", KEY, "gpu-operator", JOBS, api, timeout, sleep=sleep, clock=lambda: now[0])


def test_the_taint_goes_once_every_test_passed_and_the_others_stay():
    api = Api([{JOBS[0]: "missing", JOBS[1]: None}, {JOBS[0]: "Complete", JOBS[1]: None}, {JOBS[0]: "Complete", JOBS[1]: "Complete"}])
    assert _run(api) == 0
    [(path, patch)] = api.patches
    assert path == "/api/v1/nodes/n1"
    assert patch == [{"op": "test", "path": "/metadata/resourceVersion", "value": "42"},
                     {"op": "replace", "path": "/spec/taints", "value": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}]


def test_a_failed_test_keeps_the_taint(capsys):
    api = Api([{JOBS[0]: "Complete", JOBS[1]: "Failed"}])
    assert _run(api) == 1 and api.patches == []
    assert "forge-node-test-nccl-n1 failed" in capsys.readouterr().out


def test_tests_that_never_finish_keep_the_taint():
    api = Api([{JOBS[0]: "Complete", JOBS[1]: None}])
    assert _run(api, timeout=120) == 1 and api.patches == []


def test_a_node_without_the_taint_is_not_patched():
    api = Api([{JOBS[0]: "Complete", JOBS[1]: "Complete"}])
    api.node["spec"]["taints"] = []
    assert _run(api) == 0 and api.patches == []
