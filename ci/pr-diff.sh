#!/usr/bin/env bash
# Write the pull request's effect on every fleet as a markdown comment: `forge diff --base BASE`.
# CI-neutral: any CI runs it after `make setup` and posts OUTPUT where it likes (ci/post-comment.sh
# does it on GitHub). Exit 0 whether or not something changed; non-zero only if the diff failed.
#
#   ci/pr-diff.sh origin/main build/forge-diff.md
set -euo pipefail
cd "$(dirname "$0")/.."

base=${1:?usage: ci/pr-diff.sh BASE-REF OUTPUT.md}
out=${2:?usage: ci/pr-diff.sh BASE-REF OUTPUT.md}
export PATH="$PWD/tools/bin:$PWD/.venv/bin:$PATH"  # the pinned kustomize, and forge from the venv

mkdir -p "$(dirname "$out")"
rc=0
forge diff --base "$base" --format markdown >"$out" || rc=$?
case $rc in
  0) echo "forge diff: nothing changes on any cluster" ;;
  1) echo "forge diff: changes found, written to $out" ;;
  *) echo "forge diff failed (exit $rc)" >&2; exit "$rc" ;;
esac
