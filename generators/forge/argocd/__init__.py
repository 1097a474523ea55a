"""The Argo CD subsystem: the bootstrap of one cluster (its configuration, AppProjects, root and child
Applications), their sync order and retries, and the root's PreSync prerequisites."""
