"""Refuse credentials anywhere in an inventory: inventories are committed to git, and their values
are copied into generated files (an S3 endpoint reaches the Loki and Alluxio values).

Run on the parsed data before anything else, so the value itself is never echoed by a later
message. A finding names where it is and what it looks like, never the value.
"""
from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
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
    # A token as a URL's user name (https://<40 hex>@github.com): a user name that long is a secret.
    (("://",), re.compile(r"://[A-Za-z0-9_.~-]{20,256}@"), "a URL with a token as its user name"),
    # user:password@host without a scheme (a libpq or Redis address, an scp line).
    (("@",), re.compile(r"(?<![\w/:.-])[\w.-]{1,64}:[^\s/@:]{3,128}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})+"),
     "an address with a password in it (user:password@host)"),
    (("=",), re.compile(r"(?i)(?<![a-z0-9_])(password|passwd|pwd|sslpassword)=(?!\s|$|&)"), "a password in connection options (password=)"),
    (("?", "&"), re.compile(r"(?i)[?&](x-amz-security-token|x-amz-signature|x-amz-credential|x-goog-signature|"
                            r"access_token|auth_token|token|sig|signature|api_key|apikey|client_secret)=[^&\s]"),
     "a URL with a credential in its query (a signed or security-token URL)"),
    (("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{30,}"), "a Hugging Face token"),
    (("eyJ",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,2048}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{8,2048}"), "a JWT"),
)
# AWS secret access keys: 40 characters of base64 with upper, lower and digits (a git commit id
# is lower-case hex, so it never matches). Every pattern here runs in linear time: no unbounded
# repetition that could be retried from each position of a long line.
_BASE64_40 = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])")
_NEEDLES = re.compile("|".join(re.escape(needle) for needles, _, _ in _TOKENS for needle in needles))
# A base64 run long enough to hide a key id (28 characters encode 20): decoded and scanned again.
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{24,4096}={0,2}(?![A-Za-z0-9+/=])")
# Free text (comments included): a word of 24 or more token characters, mixing upper, lower and
# digits, with more than 4.2 bits per character is random, not a name (a git commit id, hex, has
# at most 4; names and words far less).
_WORD = re.compile(r"[A-Za-z0-9+/=_-]{24,4096}")
_ENTROPY_BITS = 4.2
# Keys whose value is a credential. `credentials_secret` (the name of a Secret) is not one.
_SECRET_KEY_NAME = re.compile(r"(^|[_.-])(password|passwd|passphrase|secret|secret_key|secret_access_key|"
                              r"access_key|api_key|apikey|token|auth_token|private_key|client_secret)$", re.I)
# A secret-looking value under such a key: long, and not a plain lower-case name (Secret names are).
_SECRET_VALUE = re.compile(r"^(?![a-z0-9.-]+$)\S{12,}$")


# Helm values name their credentials in camelCase (adminPassword, secretKey, secretAccessKey):
# under such a key any literal is a credential, short or not (`adminPassword: admin`). The names
# of Secrets and of their keys (existingSecretKey, passwordSecretName) are not.
_HELM_SECRET_KEY = re.compile(r"(^|[_.-]|(?<=[a-z0-9]))([Pp]assword|[Pp]asswd|[Pp]assphrase|[Ss]ecret[Kk]ey|[Aa]ccess[Kk]ey|"
                              r"[Ss]ecret[Aa]ccess[Kk]ey|[Aa]pi[Kk]ey|[Tt]oken|[Pp]rivate[Kk]ey|[Cc]lient[Ss]ecret)$")
_NOT_LITERAL = ("{{", "${", "$(")  # a Helm template, an environment reference: no credential in git


def find_credentials(data: Any, helm: bool = False) -> list[tuple[tuple, str]]:
    """(path, what it looks like) of every credential in the parsed inventory. helm: Helm values
    (an override's values.yaml), where a literal under a credential's key name is one too."""
    found = list(_walk(data, ()))
    return found + [f for f in _helm_literals(data, ()) if f[0] not in {p for p, _ in found}] if helm else found


def _helm_literals(value: Any, path: tuple) -> Iterator[tuple[tuple, str]]:
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, (dict, list)):
            yield from _helm_literals(item, path + (key,))
        elif (isinstance(key, str) and isinstance(item, str) and item.strip() and not key.lower().startswith("existing")
              and _HELM_SECRET_KEY.search(key) and not any(m in item for m in _NOT_LITERAL)):
            yield path + (key,), f"a literal credential under the key '{key}'"


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
    where its needle is) and one for a long word, instead of one test per needle."""
    return bool(_NEEDLES.search(text) or (len(text) >= 24 and _WORD.search(text)))


def _entropy(word: str) -> float:
    counts = Counter(word)
    return -sum(n / len(word) * math.log2(n / len(word)) for n in counts.values())


def _random_word(word: str) -> bool:
    return (any(c.isupper() for c in word) and any(c.islower() for c in word) and any(c.isdigit() for c in word)
            and _entropy(word) > _ENTROPY_BITS)


def _decoded(text: str) -> Iterator[str]:
    """Printable text that base64 runs in `text` decode to."""
    for match in _BASE64_RUN.finditer(text):
        run = match.group()
        try:
            data = base64.b64decode(run + "=" * (-len(run) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        if data and all(32 <= b < 127 for b in data):
            yield data.decode("ascii")


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
    for decoded in _decoded(text):
        for _, what in _walk_text(decoded, path):
            yield path, f"base64 of {what}"
            return
    for match in _WORD.finditer(text):
        if _random_word(match.group()):
            yield path, "a random token (high entropy: a key, password or token)"
            return
