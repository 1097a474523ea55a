"""House rules every rendered object must follow, beyond what the API server would accept.

* No Secret carries data: credentials come by reference (External Secrets, sealed at the source),
  never through Git.
* Every image is pinned (a tag other than `latest`, or a digest), so a resync cannot silently
  change what runs on the GPUs.
* Every object carries the labels that mark it as ours (e.g. app.kubernetes.io/managed-by=forge).
* Every Namespace states its Pod Security level explicitly.
"""
from __future__ import annotations

import re
from typing import Any

from forge.argocd.config import ARGOCD_PART_OF, REPOSITORY_KEYS, credential_keys, is_argocd_config
from forge.validate._schema import Link, dotted, dotted_link

PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
PSA_LEVELS = ("privileged", "baseline", "restricted")

# Kinds whose data is opaque text: a key named `image` there is data, not an image reference.
_OPAQUE = {"ConfigMap", "Secret", "CustomResourceDefinition"}
_DIGEST = re.compile(r"@[a-z0-9]+([+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}$")
_TAG_KEYS = ("tag", "version")  # what charts and operators (ClusterPolicy, NicClusterPolicy) call it


def image_problem(ref: str) -> str | None:
    """Why an image reference is not pinned, or None when it is."""
    ref = ref.strip()
    if not ref:
        return "empty image reference"
    if _DIGEST.search(ref):
        return None  # a digest pins the content whatever the tag says
    last = ref.rsplit("/", 1)[-1]  # a ':' before the last '/' is a registry port
    if ":" not in last:
        return f"image '{ref}' has no tag or digest"
    tag = last.rsplit(":", 1)[1]
    if not tag:
        return f"image '{ref}' has an empty tag"
    if tag == "latest":
        return f"image '{ref}' uses the 'latest' tag"
    return None


def _sibling_tag(parent: dict[str, Any]) -> str | None:
    for key in _TAG_KEYS:
        value = parent.get(key)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return None


def _images(node: Any, link: Link, out: list[tuple[str, str]]) -> None:
    """Every field named `image` below node. Covers pod templates of all workload kinds (their
    containers, initContainers, ephemeralContainers) and custom resources alike.

    Operators often split the reference: {repository: nvcr.io/nvidia, image: driver,
    version: 550.54}. A bare name is then pinned by its sibling tag/version.

    It runs on every object: recursion with the path as links (forge.validate._schema.Link),
    spelt out only for a problem."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "image" and (isinstance(value, str) or (isinstance(value, dict) and ("repository" in value or "name" in value))):
                problem = _image_field(node, value)
                if problem:
                    out.append((dotted_link((link, key)), problem))
            elif isinstance(value, (dict, list)):  # a scalar that is not an image: nothing below it
                _images(value, (link, key), out)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if isinstance(value, (dict, list)):
                _images(value, (link, i), out)


def _image_field(parent: dict[str, Any], value: str | dict[str, Any]) -> str | None:
    """What is wrong with `parent`'s `image` (a reference, or a map with a repository or name)."""
    if isinstance(value, str):
        sibling = _sibling_tag(parent)
        if sibling is not None and ":" not in value.rsplit("/", 1)[-1] and "@" not in value:
            return "image version is 'latest'" if sibling == "latest" else None
        return image_problem(value)
    if not _sibling_tag(value) and not value.get("digest"):
        return "image has no tag or digest"
    if _sibling_tag(value) == "latest" and not value.get("digest"):
        return "image tag is 'latest'"
    return None


def check_policies(obj: dict[str, Any], *, required_labels: dict[str, str], images: bool = True) -> list[tuple[str, str]]:
    """House-rule problems of one rendered object, as (dotted path, reason); [] when clean.
    `images` False: the object is known to hold no `image` key (forge.validate.objects.absent_keys)."""
    out: list[tuple[str, str]] = []
    kind = obj.get("kind")
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}

    argocd_config = is_argocd_config(obj)
    if kind == "Secret" and argocd_config:
        # An Argo CD repository entry: where and what in Git, never a credential.
        for key in credential_keys(obj):
            out.append((f"stringData.{key}", "a repository Secret carries a credential in Git; only "
                                             f"{', '.join(sorted(REPOSITORY_KEYS))} may be here (credentials: ExternalSecret)"))
    elif kind == "Secret":
        for field in ("data", "stringData"):
            if obj.get(field):
                out.append((field, "Secret carries credentials in Git; reference them (e.g. ExternalSecret) instead"))

    if images and kind not in _OPAQUE:
        try:
            _images(obj, None, out)
        except RecursionError:
            out.append(("", "nested too deeply to check its images"))

    for key, want in required_labels.items():
        if argocd_config and key in ARGOCD_PART_OF:
            want = ARGOCD_PART_OF[key]  # Argo CD's settings informer selects part-of argocd
        have = labels.get(key)
        if have is None:
            out.append((f"metadata.labels.{key}", f"required label missing (want '{want}')"))
        elif have != want:
            out.append((f"metadata.labels.{key}", f"label is '{have}', want '{want}'"))

    if kind == "Namespace":
        level = labels.get(PSA_ENFORCE)
        if level is None:
            out.append((f"metadata.labels.{PSA_ENFORCE}", "Namespace has no Pod Security enforce level"))
        elif level not in PSA_LEVELS:
            out.append((f"metadata.labels.{PSA_ENFORCE}", f"'{level}' is not one of {', '.join(PSA_LEVELS)}"))
    return out


def check_values_images(values: dict[str, Any]) -> list[tuple[str, str]]:
    """In Helm values we set: a `tag`/`version` of 'latest' or '' next to an `image`/`repository`
    key or inside an `image:` map, or an `image` string tagged latest. ('' usually means "the
    chart's appVersion" in a chart's defaults, but when we set it, we mean to pin and did not.)
    A digest rescues either. Tags the chart defaults to (flyte-binary's `latest`) are not seen
    here: the rendered objects' check in check_policies catches those."""
    out: list[tuple[str, str]] = []

    def walk(node: Any, path: list[str | int]) -> None:
        if isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, path + [i])
            return
        if not isinstance(node, dict):
            return
        is_image = "image" in node or "repository" in node or (bool(path) and path[-1] == "image")
        if is_image and not node.get("digest"):
            for key in _TAG_KEYS:
                if key in node and isinstance(node[key], str) and node[key].strip() in ("", "latest"):
                    out.append((dotted(path + [key]), f"image {key} is {node[key]!r}: pin a version"))
        image = node.get("image")
        if isinstance(image, str) and ":" in image.rsplit("/", 1)[-1] and image_problem(image):
            out.append((dotted(path + ["image"]), image_problem(image) or ""))
        for key, value in node.items():
            walk(value, path + [key])

    walk(values, [])
    return out
