"""The ML engineer's code, compiled by the real SDK and judged against forge's platform.

`workflows/` (top level) holds the seed's workloads as Flyte code an engineer copies;
`workflows/targets.yaml` says where each workflow runs (cluster, project, domain). This package
compiles them with flytekit (`forge.workflows.serialize`, in a child process: the SDK and the
user's modules never load into forge itself), reads each task template as propeller 1.16.8 reads
it (`forge.workflows.tasks`), and checks it against the cluster it targets (`forge.workflows.judge`):
its PodTemplate, its queue, its priority, its resources, the fabric of multi-node training, its
image. The fleet in a box builds its jobs from the same compiled tasks (forge.twin.submit).
"""
