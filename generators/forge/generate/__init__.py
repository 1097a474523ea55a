"""The generate stage: the fleet's file tree (tree), built incrementally by content-hash keys (cache,
incremental, plan_cache), written by one journaled writer, guarded against hand edits, with the
per-cluster overrides merged in."""
