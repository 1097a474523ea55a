"""`forge bench`: how long generate, render and validate take, against bare `kustomize build`, and
the bench table as a chart. The box's and the rollout's benches (forge.twin.bench, forge.rollout.bench)
add to it."""
