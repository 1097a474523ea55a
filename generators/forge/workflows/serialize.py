"""`python -m forge.workflows.serialize DIR MODULE...`: compile Flyte code with the real flytekit,
as `pyflyte package` does (flytekit.tools.serialize_helpers.get_registrable_entities over every
task, workflow and launch plan the modules define), and print JSON on stdout:

    {"tasks": {name: TaskTemplate as flyteidl's JSON}, "workflows": {name: [task names it runs]}}

It runs in a child process of forge (forge.workflows.compile): flytekit and the engineer's modules
(Ray, plugins, whatever they import) never load into forge, and each compile starts from flytekit's
empty registry. A module that fails to import is one line on stderr and exit 3.
"""
from __future__ import annotations

import importlib
import json
import sys
import warnings
from typing import Any

VERSION = "v0"  # the registration version, which no check reads
PLACEHOLDER_PROJECT, PLACEHOLDER_DOMAIN = "forge", "check"  # targets.yaml names the real ones


def _task_refs(node: dict[str, Any]) -> list[str]:
    """The tasks a workflow node runs: a task node, a map task's (ArrayNode's) sub-node, branches."""
    out = []
    if "taskNode" in node:
        out.append(node["taskNode"]["referenceId"]["name"])
    if "arrayNode" in node:
        out += _task_refs(node["arrayNode"]["node"])
    for case in (node.get("branchNode") or {}).get("ifElse", {}).get("other", []) + \
            [c for c in [(node.get("branchNode") or {}).get("ifElse", {}).get("case")] if c]:
        out += _task_refs(case.get("thenNode") or {})
    return out


def compile_modules(folder: str, modules: list[str]) -> dict[str, Any]:
    warnings.simplefilter("ignore")  # flytekit's deprecation warnings are not the engineer's problem here
    from flytekit.configuration import ImageConfig, SerializationSettings
    from flytekit.core.context_manager import FlyteContextManager
    from flytekit.models.admin.workflow import WorkflowSpec
    from flytekit.models.task import TaskSpec
    from flytekit.tools.serialize_helpers import get_registrable_entities
    from google.protobuf.json_format import MessageToDict

    sys.path.insert(0, folder)  # as pyflyte run FILE: the folder without __init__.py is the source root
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # the engineer's code: any error is theirs, reported in one line
            sys.stderr.write(f"{module}.py: cannot be imported: {type(exc).__name__}: {exc}\n")
            raise SystemExit(3) from None
    settings = SerializationSettings(image_config=ImageConfig.auto_default_image(), project=PLACEHOLDER_PROJECT,
                                     domain=PLACEHOLDER_DOMAIN, version=VERSION)
    ctx = FlyteContextManager.current_context().with_serialization_settings(settings)
    with FlyteContextManager.with_context(ctx) as ctx:
        entities = get_registrable_entities(ctx)
    tasks, workflows = {}, {}
    for entity in entities:
        if isinstance(entity, TaskSpec):
            tasks[entity.template.id.name] = MessageToDict(entity.template.to_flyte_idl())
        elif isinstance(entity, WorkflowSpec):
            template = MessageToDict(entity.template.to_flyte_idl())
            workflows[entity.template.id.name] = sorted({n for node in template.get("nodes", []) for n in _task_refs(node)})
    return {"tasks": tasks, "workflows": workflows}


def main(argv: list[str]) -> None:
    json.dump(compile_modules(argv[0], argv[1:]), sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
