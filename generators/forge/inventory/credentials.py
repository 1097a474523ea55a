"""Refuse credentials anywhere in an inventory: inventories are committed to git, and their values
are copied into generated files (an S3 endpoint reaches the Loki and Alluxio values).

Run on the parsed data before anything else, so the value itself is never echoed by a later
message. A finding names where it is and what it looks like, never the value.
"""
from __future__ import annotations

import re
from typing import Any, Iterator


FIX = ("credentials never go in an inventory (it is committed and copied into generated files): "
        "put them in a Kubernetes Secret and name it (cluster.s3.credentials_secret); "
        "if this one was pushed anywhere, rotate it")

# Patterns of well-known credentials, matched anywhere in a key or value, each after a plain
# substring test (fast on a long text that cannot match).
_TOKENS = (
    (("AKIA", "ASIA", "ABIA", "ACCA"), re.compile(r"(?<![A-Z0-9])(AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"), "an AWS access key id"),
    (("PRIVATE KEY",), re.compile(r"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----"), "a PEM private key"),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     re.compile(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{22,}"), "a GitHub token"),
    (("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), "a GitLab token"),
    (("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), "a Slack token"),
    # user:password@ in a URL; `ssh://git@host` (a user without a password) is fine.
    (("://",), re.compile(r"://[^/\s:@]{0,256}:[^/\s@]{1,256}@"), "a URL with a password in it (user:password@)"),
)
# AWS secret access keys: 40 characters of base64 with upper, lower and digits (a git commit id
# is lower-case hex, so it never matches). Every pattern here runs in linear time: no unbounded
# repetition that could be retried from each position of a long line.
_BASE64_40 = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])")
_NEEDLES = re.compile("|".join(re.escape(needle) for needles, _, _ in _TOKENS for needle in needles))
# Keys whose value is a credential. `credentials_secret` (the name of a Secret) is not one.
_SECRET_KEY_NAME = re.compile(r"(^|[_.-])(password|passwd|passphrase|secret|secret_key|secret_access_key|"
                              r"access_key|api_key|apikey|token|auth_token|private_key|client_secret)$", re.I)
# A secret-looking value under such a key: long, and not a plain lower-case name (Secret names are).
_SECRET_VALUE = re.compile(r"^(?![a-z0-9.-]+$)\S{12,}$")


def find_credentials(data: Any) -> list[tuple[tuple, str]]:
    """(path, what it looks like) of every credential in the parsed inventory."""
    return list(_walk(data, ()))


def find_in_text(text: str) -> list[tuple[int, str]]:
    """(line, what) of well-known credentials anywhere in the text, comments included: a comment
    is committed to git as much as a value is."""
    if not _maybe(text):  # no pattern can match any line (none spans a line break)
        return []
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        what = next(_walk_text(line, ()), None)
        if what:
            found.append((number, what[1]))
    return found


def message(what: str) -> str:
    return f"looks like {what}: {FIX}"


def _walk(value: Any, path: tuple) -> Iterator[tuple[tuple, str]]:
    # Only containers and strings that may hold a credential are visited (a 100-node inventory
    # has thousands of scalars).
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                if _maybe(key):
                    yield from _walk_text(key, path + (key,))
                if isinstance(item, str) and _SECRET_KEY_NAME.search(key) and _SECRET_VALUE.match(item):
                    yield path + (key,), f"a secret under the key '{key}'"
                    continue
            if isinstance(item, (dict, list)) or (isinstance(item, str) and _maybe(item)):
                yield from _walk(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, (dict, list)) or (isinstance(item, str) and _maybe(item)):
                yield from _walk(item, path + (index,))
    elif isinstance(value, str):
        yield from _walk_text(value, path)


def _maybe(text: str) -> bool:
    """False when no pattern can match `text`: one search for every needle (a pattern matches only
    where its needle is) and one for the base64 run, instead of one test per needle."""
    return bool(_NEEDLES.search(text) or (len(text) >= 40 and _BASE64_40.search(text)))


def _walk_text(text: str, path: tuple) -> Iterator[tuple[tuple, str]]:
    if not _maybe(text):
        return
    for needles, pattern, what in _TOKENS:
        if any(needle in text for needle in needles) and pattern.search(text):
            yield path, what
            return
    for match in _BASE64_40.finditer(text):
        word = match.group()
        if any(c.isupper() for c in word) and any(c.islower() for c in word) and any(c.isdigit() for c in word):
            yield path, "an AWS secret access key"
            return
