#!/usr/bin/env bash
# Write the pull request's effect on every fleet as a markdown comment: `forge diff --base BASE`.
# First, for every cluster whose Applications the change touches, the change is played on the fleet
# in a box (`forge twin upgrade CLUSTER --base BASE`): what a real API server refuses of it
# (immutable fields, CEL transition rules) reaches the diff as a HIGH risk. FORGE_PR_TWIN=0 skips
# that. CI-neutral: any CI runs it after `make setup` and posts OUTPUT where it likes
# (ci/post-comment.sh does it on GitHub). Exit 0 whether or not something changed; non-zero only
# if the diff failed (a refusal is a risk in the comment, not a failure here: the tests gate).
#
#   ci/pr-diff.sh origin/main build/forge-diff.md
set -euo pipefail
cd "$(dirname "$0")/.."

base=${1:?usage: ci/pr-diff.sh BASE-REF OUTPUT.md}
out=${2:?usage: ci/pr-diff.sh BASE-REF OUTPUT.md}
export PATH="$PWD/tools/bin:$PWD/.venv/bin:$PATH"  # the pinned kustomize, and forge from the venv

mkdir -p "$(dirname "$out")"
if [ "${FORGE_PR_TWIN:-1}" != 0 ]; then
  touched=$(git diff --name-only "$base" -- overlays clusters | awk -F/ '$1 == "overlays" || $3 == "argocd" {print $2}' | sort -u)
  if [ -n "$touched" ]; then
    FORGE_UPSTREAM="$(bash ci/find-upstream.sh)"  # the box applies the CRDs each chart installs
    export FORGE_UPSTREAM
  fi
  for cluster in $touched; do
    [ -f "clusters/$cluster/inventory.yaml" ] || continue  # a cluster the change removes
    forge twin upgrade "$cluster" --base "$base" || [ $? -eq 1 ] || { echo "forge twin upgrade $cluster failed" >&2; exit 2; }
  done
fi
rc=0
forge diff --base "$base" --format markdown >"$out" || rc=$?
case $rc in
  0) echo "forge diff: nothing changes on any cluster" ;;
  1) echo "forge diff: changes found, written to $out" ;;
  *) echo "forge diff failed (exit $rc)" >&2; exit "$rc" ;;
esac
