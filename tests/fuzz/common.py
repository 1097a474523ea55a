"""What every fuzz property shares: the example count and settings, the hang alarm, the mutations
(of a parsed tree and of bytes) and the check that a refusal names the file and a line in it.

FORGE_FUZZ_EXAMPLES examples per property (default 100, `make test`); `make fuzz` runs 10,000.
"""
from __future__ import annotations

import copy
import os
import re
import signal
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from forge.errors import ForgeError

EXAMPLES = int(os.environ.get("FORGE_FUZZ_EXAMPLES", "100"))
# Hypothesis's deadline is wall-clock, which a shared machine stretches many times over; instead
# loading is bounded in CPU seconds, and a hang is cut by an alarm (see `bounded`).
LOAD_CPU_SECONDS = 5
HANG_SECONDS = 120
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=EXAMPLES <= 100,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def assert_refused_well(exc: ForgeError, file: str, content: bytes) -> None:
    """A refusal of `file` (holding `content`): every problem `file:line: ...` with the line inside
    the file; a ForgeError without problems (a whole-file or a fleet error) has a message, and each
    of its lines that names `file:<n>:` names a line inside the file."""
    last = content.count(b"\n") + 1
    problems = getattr(exc, "problems", None)
    if not problems:
        assert str(exc).strip(), "a ForgeError with no message"
        for line in str(exc).splitlines():
            found = re.match(rf"{re.escape(file)}:(\d+): ", line)
            assert not found or 1 <= int(found.group(1)) <= last, line
        return
    for problem in problems:
        assert problem.file == file and 1 <= problem.line <= last, str(problem)
        assert problem.message.strip(), str(problem)
        assert str(problem).startswith(f"{file}:{problem.line}: ")


class Hang(Exception):
    pass


@contextmanager
def bounded():
    def alarm(signum, frame):
        raise Hang(f"no answer in {HANG_SECONDS}s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(HANG_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ---- structure: a parsed file, with keys and values dropped, duplicated or replaced -----------

ODD = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from([0, -1, 10**23, 2**63, 10**20]), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["", "all", "1g.10gb", "1g.18gb", "H200-141GB", "connectx-7", "a" * 70, "Rack 1", "h200-🚀",
                     "1.99", "1.34", "0.0.0.0/0", "10.0.0.1/24", "/dev/nvme0n1", "compute", "gpu", "NoSchedule",
                     "https://user:pw@host", "AKIA" + "IOSFODNN7EXAMPLE", "~", "null", "yes", "*x", "&x"]),
    st.lists(st.integers(min_value=-1, max_value=12), max_size=4),
    st.dictionaries(st.text(max_size=8), st.integers(min_value=-2, max_value=10), max_size=3),
)


def paths(value: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += paths(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += paths(item, path + (index,))
    return out


def mutate(data: Any, draw) -> Any:
    path = draw(st.sampled_from(paths(data)))
    if not path:
        return draw(ODD)
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    op = draw(st.sampled_from(["replace", "drop", "duplicate", "rename"]))
    if op == "replace":
        parent[last] = draw(ODD)
    elif op == "drop":
        del parent[last]
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
    elif isinstance(parent, dict):  # rename (or duplicate a key: YAML cannot hold two, so rename)
        new_key = draw(st.text(max_size=12) | st.sampled_from(list(parent)))
        parent[new_key] = parent.pop(last)
    return data


# ---- bytes: a file's text with bytes, tokens and lines inserted, deleted or swapped -----------

TOKENS = [b"\x00", b"\x1b", b"\xff", b"\xc3", b"\t", b"\r", b"&a ", b"*a", b"[", b"]", b"{", b"}", b": ", b"- ",
          b"? ", b"<<: ", b"!!int ", b"!!binary ", b"!!timestamp ", b"!!python/object ", b"---\n", b"...\n",
          b"%YAML 1.1\n", b"'", b'"', b"#", b"~", b"9" * 60, b"1e999", b".nan", b"\xef\xbb\xbf", b"&x [*x]",
          "🚀".encode(), b"AKIA" + b"IOSFODNN7EXAMPLE", b"-----BEGIN " + b"PRIVATE KEY-----"]


def mutate_bytes(content: bytes, draw) -> bytes:
    at = draw(st.integers(min_value=0, max_value=len(content)))
    op = draw(st.sampled_from(["insert", "token", "delete", "flip", "line", "truncate"]))
    if op == "insert":
        return content[:at] + draw(st.binary(min_size=1, max_size=8)) + content[at:]
    if op == "token":
        return content[:at] + draw(st.sampled_from(TOKENS)) + content[at:]
    if op == "delete":
        return content[:at] + content[at + draw(st.integers(min_value=1, max_value=40)):]
    if op == "flip" and at < len(content):
        return content[:at] + bytes([content[at] ^ draw(st.integers(min_value=1, max_value=255))]) + content[at + 1:]
    if op == "line":  # duplicate or move a line: duplicate keys, wrong indentation
        lines = content.split(b"\n")
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        lines.insert(j, lines[i])
        return b"\n".join(lines)
    return content[:at]
