"""The PostSync Job that mounts the listed buckets into Alluxio's namespace (forge.components.alluxio):
each at /<bucket name>, the training data read-only."""
from __future__ import annotations

from typing import Any

from forge.facts import versions
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL
from forge.model.cluster import ClusterModel

NAMESPACE = "alluxio"
RELEASE = "alluxio"  # the chart's fullnameOverride is `alluxio` too: objects are alluxio-<role>
IMAGE = "alluxio"  # images in charts/versions.yaml: the chart's appVersion, pinned so a chart bump cannot change it
MOUNT_JOB_UID = 1000  # the Alluxio image's `alluxio` user
READ_ONLY_KEYS = frozenset({"datasets"})  # keys of cluster.s3.buckets Alluxio mounts read-only


def read_only_buckets(cluster: ClusterModel) -> frozenset[str]:
    """Bucket names Alluxio mounts read-only: the training data (key READ_ONLY_KEYS of
    cluster.s3.buckets), which no task or cache may change; Alluxio's own credential needs only
    read access there (docs/security.md)."""
    return frozenset(name for key, name in cluster.settings.s3.buckets.items() if key in READ_ONLY_KEYS)


def mount_job(cluster: ClusterModel, buckets: list[tuple[str, str]], read_only: frozenset[str] = frozenset()) -> dict[str, Any]:
    """After each sync, mount every listed bucket (name, write type) at /<bucket> unless it already
    is (the ones in `read_only` with --readonly, and switched to read-only by updateMount if an
    earlier sync mounted them writable), and set a writable bucket's write type as path
    configuration (what native clients and the job service use there; the S3 proxy's is
    proxy-wide, layout.proxy_write_type). Idempotent; a bucket removed from the inventory stays
    mounted until someone unmounts it by hand (an unmount drops its cached data, which a config
    change should not do silently)."""
    lines = ["set -eu", "mounted=$(/opt/alluxio/bin/alluxio fs mount | awk '{print $3}')"]
    for bucket, write_type in buckets:
        if bucket in read_only:
            lines += [f"if echo \"$mounted\" | grep -qx /{bucket}; then /opt/alluxio/bin/alluxio fs updateMount --readonly /{bucket}; "
                      f"else /opt/alluxio/bin/alluxio fs mount --readonly /{bucket} s3://{bucket}/; fi"]
            continue
        lines += [f"if echo \"$mounted\" | grep -qx /{bucket}; then echo '/{bucket} already mounted'; "
                  f"else /opt/alluxio/bin/alluxio fs mount /{bucket} s3://{bucket}/; fi",
                  f"/opt/alluxio/bin/alluxio fsadmin pathConf add --property alluxio.user.file.writetype.default={write_type} /{bucket}"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "alluxio-mount-buckets",
            "namespace": NAMESPACE,
            "annotations": {
                "argocd.argoproj.io/hook": "PostSync",
                "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation",
            },
        },
        "spec": {
            "backoffLimit": 30,  # the masters may still be electing a leader after a sync
            "template": {
                "spec": {
                    "restartPolicy": "OnFailure",
                    "priorityClassName": SYSTEM_CLUSTER_CRITICAL,
                    "nodeSelector": cluster.system_node_selector,
                    "tolerations": cluster.system_tolerations,
                    "automountServiceAccountToken": False,  # it talks to Alluxio, never the API server
                    # The image's own user (alluxio, uid/gid 1000) rather than root.
                    "securityContext": {"runAsNonRoot": True, "runAsUser": MOUNT_JOB_UID, "runAsGroup": MOUNT_JOB_UID,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "mount",
                        "image": versions.image(IMAGE).ref,
                        "command": ["/bin/bash", "-c", "\n".join(lines) + "\n"],
                        # The chart's ConfigMap holds the masters' addresses (ALLUXIO_JAVA_OPTS).
                        "envFrom": [{"configMapRef": {"name": f"{RELEASE}-config"}}],
                        "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
                        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                            "capabilities": {"drop": ["ALL"]}},
                        # The CLI's log folder and the JVM's temporary files: the only writes.
                        "volumeMounts": [{"name": "logs", "mountPath": "/opt/alluxio/logs"}, {"name": "tmp", "mountPath": "/tmp"}],
                    }],
                    "volumes": [{"name": "logs", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    }
