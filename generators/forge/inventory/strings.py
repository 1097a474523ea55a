"""Free strings checked against what their consumer accepts (issue 26, injection): a string forge
passes into a command line, a JVM option, a properties file or an AppProject's globs is refused
unless it is exactly the kind of value that consumer reads, so it can add nothing of its own.

- a region is a region (`us-west-2`): Alluxio's Java options carry it as `-Daws.region=...`, where
  a space or a line break would start an option of the caller's choosing;
- a URL is scheme://host[:port][/path], its host a hostname or an IP address, with no userinfo
  (`user@`, `user:pass@`, a token as the user name), no query or fragment (a signed or
  security-token query is a credential), no whitespace;
- nothing that reaches an AppProject holds a glob character (`*`, `?`, `[`, `]`, `{`, `}`, `!`):
  Argo CD reads sourceRepos and destinations as patterns, so `https://*` would allow every repository;
- a hostname is a DNS name: labels of letters, digits and '-'.
"""
from __future__ import annotations

import ipaddress
import posixpath
import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field

_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
_HOSTNAME = re.compile(rf"{_LABEL}(\.{_LABEL})*", re.I)
_REGION = re.compile(r"[a-z]{2,}(-[a-z0-9]+){0,4}")
_GLOB = set("*?[]{}!")
_SCP_GIT = re.compile(r"git@([^:/\s]+):([^\s]+)")  # git@host:owner/repo.git


def _hostname(value: str) -> bool:
    if len(value) <= 253 and _HOSTNAME.fullmatch(value):
        return True
    try:
        ipaddress.ip_address(value.strip("[]"))
    except ValueError:
        return False
    return True


def hostname(value: str) -> str:
    if not _hostname(value):
        raise ValueError(f"'{value}' is not a hostname: DNS labels of letters, digits and '-' joined by '.', "
                         "or an IP address (no scheme, port, path or spaces)")
    return value


def region(value: str) -> str:
    if len(value) > 32 or not _REGION.fullmatch(value):
        raise ValueError(f"{value!r} is not a region: lower-case letters, digits and '-' such as us-west-2 "
                         "(it is passed to Java and AWS clients as an option: no spaces or other characters)")
    return value


def _url(value: str, schemes: tuple[str, ...], what: str) -> str:
    allowed = " or ".join(f"{s}://" for s in schemes)
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError(f"{what} holds whitespace or a control character: a URL has none")
    globs = sorted(c for c in _GLOB if c in value and (c != "?" or "://" not in value))  # `?` of a query: below
    if globs:
        raise ValueError(f"'{_shown(value)}' holds a glob character ({', '.join(globs)}): {what} reaches Argo CD's "
                         "AppProject, which reads it as a pattern; name one exact URL")
    if what == "a git URL" and (scp := _SCP_GIT.fullmatch(value)):
        if not _hostname(scp.group(1)):
            raise ValueError(f"'{value}': '{scp.group(1)}' is not a hostname")
        return value
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"'{value}' is not a URL ({exc})") from None
    if parts.scheme not in schemes or not parts.netloc:
        raise ValueError(f"'{value}' is not {what}: expected {allowed}host[:port][/path]")
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else None
    if userinfo is not None and not (parts.scheme == "ssh" and ":" not in userinfo and userinfo == "git"):
        raise ValueError(f"'{_shown(value)}' has a user name or password before '@': credentials never go in a URL "
                         "(they are committed and copied into generated files); give them to the consumer as a Secret")
    if parts.query or parts.fragment or value.endswith(("?", "#")):
        raise ValueError(f"'{_shown(value)}' has a query or fragment: {what} is scheme://host[:port][/path] "
                         "(a signed or security-token query is a credential; never commit one)")
    if not parts.hostname or not _hostname(parts.hostname):
        raise ValueError(f"'{_shown(value)}': '{parts.hostname or ''}' is not a hostname")
    del port
    return value


def _shown(value: str) -> str:
    """The URL without what might be a credential (userinfo, query)."""
    head, at, rest = value.partition("@")
    if at:
        scheme = head.partition("://")[0] + "://" if "://" in head else ""
        value = f"{scheme}<hidden>@{rest}"
    return value.partition("?")[0] + ("?<hidden>" if "?" in value else "")


def http_url(value: str) -> str:
    return _url(value, ("http", "https"), "a URL")


def https_url(value: str) -> str:
    return _url(value, ("https",), "an https URL")


def git_url(value: str) -> str:
    return _url(value, ("https", "ssh"), "a git URL")


Hostname = Annotated[str, AfterValidator(hostname)]
Region = Annotated[str, AfterValidator(region)]
HttpUrl = Annotated[str, AfterValidator(http_url)]
HttpsUrl = Annotated[str, AfterValidator(https_url)]
GitUrl = Annotated[str, AfterValidator(git_url)]


_DB_OPTION = re.compile(r"([a-z_]+)=([A-Za-z0-9_.:/@-]*)")
_DB_SECRET_KEYS = {"password", "passfile", "sslpassword", "sslkey"}


def db_options(value: str) -> str:
    """libpq connection options, `key=value` separated by spaces (Flyte's database `options`):
    never a password (it goes in the database's Secret)."""
    for part in value.split(" "):
        match = _DB_OPTION.fullmatch(part)
        if not match:
            raise ValueError(f"options: '{part[:40]}' is not key=value (libpq keywords such as sslmode=require, "
                             "separated by single spaces; values of letters, digits and _ . : / @ -)")
        if match.group(1) in _DB_SECRET_KEYS:
            raise ValueError(f"options: '{match.group(1)}=' is a credential: it never goes in an inventory (committed "
                             "and copied into generated files); the password comes from database.password_secret")
    return value


DbOptions = Annotated[str, AfterValidator(db_options)]


SYSTEM_FOLDERS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/root", "/run", "/sbin",
                  "/sys", "/usr", "/var/lib/kubelet", "/var/lib/containerd", "/var/run")


def mount_path(value: str) -> str:
    """An NVMe mount: absolute, in normal form, not / nor under a system folder."""
    normal = posixpath.normpath(value)
    if ".." in value.split("/"):
        raise ValueError(f"'{value}' climbs with '..': an NVMe mount is a plain absolute path such as /mnt/nvme0")
    if normal != value:
        raise ValueError(f"'{value}' is not in normal form: write '{normal}' (no '//', '/./' or trailing '/'; "
                         "two spellings of one folder would pass as two mounts)")
    if normal == "/" or any(normal == s or normal.startswith(s + "/") for s in SYSTEM_FOLDERS):
        raise ValueError(f"'{value}' is a system folder: it becomes a hostPath of the cache workers, which run as root; "
                         "mount NVMe devices under /mnt (or another folder of their own)")
    return value


# A feature gate's name as kube-apiserver's --feature-gates takes it (MutatingAdmissionPolicy).
FeatureGate = Annotated[str, Field(pattern=r"^[A-Z][A-Za-z0-9]{1,80}$")]
# A group/version as --runtime-config takes it (admissionregistration.k8s.io/v1beta1).
GroupVersion = Annotated[str, Field(pattern=r"^[a-z0-9.-]+/v[0-9]+((alpha|beta)[0-9]+)?$")]
# An EC2 placement group's name (up to 255 ASCII characters; forge keeps to DNS-like ones).
PlacementGroupName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")]
# reserved: an EC2 capacity reservation (On-Demand Capacity Reservation or Capacity Block for ML),
# Karpenter's `karpenter.sh/capacity-type: reserved`, selected by its tags (forge.components.karpenter).
CapacityType = Literal["spot", "on-demand", "reserved"]
