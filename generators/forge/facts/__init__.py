"""Facts about the world forge targets, read by every stage: the hardware catalogue (catalogue/) and
its test floors, the pins file (charts/versions.yaml), and what each Kubernetes minor serves."""
