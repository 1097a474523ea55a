"""`forge diff` under a locale that is not UTF-8 (issue 26: "a traceback from forge diff under a
non-UTF-8 locale").

The POSIX locale with Python's UTF-8 mode and locale coercion turned off is the real thing, not a
stand-in: the interpreter's preferred encoding is then ASCII, so any file forge reads without
`encoding="utf-8"` and any text it prints raw would end in a UnicodeDecodeError or
UnicodeEncodeError. The change carries non-ASCII text (an override's Helm value) so that both the
read of the generated values and the printed diff meet it.
"""
from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import REPO, regenerate

NON_UTF8 = {"LC_ALL": "POSIX", "LANG": "POSIX", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
            "PYTHONIOENCODING": ""}
VALUE = "/var/loki-Zürich–“x”"


def run_forge_posix(repo, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIO"))}
    env.update(NON_UTF8)
    env["PYTHONPATH"] = str(REPO / "generators")
    return subprocess.run([sys.executable, "-m", "forge.commands.main", *args, "--root", str(repo)], env=env,
                          capture_output=True, timeout=300)


def test_the_interpreter_really_runs_ascii_under_this_locale():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIO"))}
    env.update(NON_UTF8)
    done = subprocess.run([sys.executable, "-c", "import locale; print(locale.getpreferredencoding())"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ANSI_X3.4-1968"  # ASCII: otherwise the test below proves nothing


def test_diff_of_non_ascii_text_under_posix_locale_reports_it_without_traceback(repo, kustomize):
    override = repo / "clusters/h200/overrides/loki/values.yaml"
    override.parent.mkdir(parents=True)
    override.write_text(f"loki:\n  commonConfig:\n    path_prefix: {VALUE}\n", encoding="utf-8")
    regenerate(repo)

    done = run_forge_posix(repo, "diff", "--base", "HEAD")

    stderr = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    assert done.returncode == 1, stderr  # 1: changes found
    out = done.stdout.decode("utf-8", "replace")
    line = next(line for line in out.splitlines() if "loki.commonConfig.path_prefix" in line)
    # Printed in full (UTF-8, or escaped where the stream cannot take it), never dropped.
    assert "Zürich" in line or "Z\\xfcrich" in line, line
