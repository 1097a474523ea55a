"""`make scan`: checkov's Kubernetes checks over the rendered output (and the hydrated output when
present), with the reviewed skips of ci/checkov-skips.yaml.

Exit 0 when every finding is skipped with a reason; 1 when a finding is neither fixed nor skipped,
or a skip matches nothing (stale: remove it); 2 when checkov cannot run or the skip file is wrong.
One line per problem: `FAIL <file> <Kind/namespace/name> <check id> <check name>`.

The skip file maps a check id to the resource kinds it is skipped for, each with its reason:

    CKV_K8S_43:            # checkov's id
      PodTemplate: why the check does not fit this kind of object

A skip is per check and kind, never per object: a check that fits a kind is fixed for all of it.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SKIPS = ROOT / "ci/checkov-skips.yaml"
CHECK_ID = re.compile(r"^CKV2?_K8S_[0-9]+$")


class ScanError(Exception):
    pass


def load_skips(path: Path = SKIPS) -> dict[str, dict[str, str]]:
    """check id -> kind -> reason; refuses entries without a reason or with a malformed id."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ScanError(f"{path}: want a mapping of check id -> kind -> reason")
    out: dict[str, dict[str, str]] = {}
    for check, kinds in data.items():
        if not isinstance(check, str) or not CHECK_ID.match(check):
            raise ScanError(f"{path}: {check!r} is not a checkov Kubernetes check id (CKV_K8S_<n>)")
        if not isinstance(kinds, dict) or not kinds:
            raise ScanError(f"{path}: {check}: want resource kind -> reason")
        for kind, reason in kinds.items():
            if not isinstance(reason, str) or len(reason.strip()) < 20:
                raise ScanError(f"{path}: {check}.{kind}: give the reason this check does not fit a {kind}")
        out[check] = {str(k): v.strip() for k, v in kinds.items()}
    return out


def json_documents(text: str) -> list:
    """checkov's JSON output: one report, a list of them, or (one --directory each, as with
    build/rendered and build/hydrated) several reports one after the other."""
    decoder, out, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return out
        value, at = decoder.raw_decode(text, at)
        out += value if isinstance(value, list) else [value]


def checkov(dirs: list[Path]) -> list[dict]:
    """Failed checks of checkov's kubernetes framework over `dirs`."""
    exe = Path(sys.executable).with_name("checkov")
    if not exe.is_file():
        raise ScanError(f"{exe} is missing: run `make scan` (it installs checkov, pinned in ci/scan.lock, into .venv-scan/)")
    command = [str(exe), "--framework", "kubernetes", "--output", "json", "--quiet", "--compact", "--skip-download"]
    for d in dirs:
        command += ["--directory", str(d)]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise ScanError(f"checkov failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    reports = json_documents(proc.stdout)
    failed = []
    for report in reports:
        if report.get("summary", {}).get("parsing_errors"):
            raise ScanError(f"checkov could not parse: {report['results'].get('parsing_errors')}")
        failed += report.get("results", {}).get("failed_checks", [])
    return failed


def kind_of(finding: dict) -> str:
    return str(finding["resource"]).split(".", 1)[0]  # checkov names resources Kind.namespace.name


def triage(failed: list[dict], skips: dict[str, dict[str, str]]) -> tuple[list[str], list[str], Counter]:
    """(problems, stale skips, skipped findings by (check, kind))."""
    problems, used = [], Counter()
    for f in failed:
        check, kind = f["check_id"], kind_of(f)
        if kind in skips.get(check, {}):
            used[(check, kind)] += 1
            continue
        resource = str(f["resource"]).replace(".", "/", 2)
        problems.append(f"FAIL {f.get('file_path', '?')} {resource} {check} {f.get('check_name', '')}")
    stale = [f"STALE {check} {kind}: no finding left to skip; remove it from {SKIPS.relative_to(ROOT)}"
             for check, kinds in skips.items() for kind in kinds if (check, kind) not in used]
    return sorted(problems), stale, used


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="rendered (and hydrated) output folders")
    args = parser.parse_args(argv)
    try:
        dirs = [d for d in args.dirs if d.is_dir()]
        if not dirs:
            raise ScanError(f"nothing to scan in {', '.join(map(str, args.dirs))}: run `make render` first")
        skips = load_skips()
        problems, stale, used = triage(checkov(dirs), skips)
    except ScanError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for line in problems + stale:
        print(line)
    scanned = ", ".join(map(str, dirs))
    print(f"checkov over {scanned}: {len(problems)} findings not fixed or skipped, {sum(used.values())} skipped "
          f"by {len(used)} reviewed skips, {len(stale)} stale skips")
    return 1 if problems or stale else 0


if __name__ == "__main__":
    sys.exit(main())
