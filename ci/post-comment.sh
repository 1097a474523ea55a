#!/usr/bin/env bash
# Post FILE as the pull request's forge-diff comment, updating the previous one instead of adding
# another (found by the marker forge puts on its first line). GitHub-specific: needs the `gh` CLI
# (on GitHub's runners), GH_TOKEN, GITHUB_REPOSITORY and PR_NUMBER. A pull request from a fork
# gets a read-only token: then the diff goes to the job summary only, with a warning.
#
#   GH_TOKEN=... PR_NUMBER=12 ci/post-comment.sh build/forge-diff.md
set -euo pipefail

file=${1:?usage: ci/post-comment.sh FILE}
: "${GITHUB_REPOSITORY:?}" "${PR_NUMBER:?}" "${GH_TOKEN:?}"
marker='<!-- forge-diff -->'

if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
  cat "$file" >>"$GITHUB_STEP_SUMMARY"
fi

payload=$(jq -n --rawfile body "$file" '{body: $body}')
comments="repos/$GITHUB_REPOSITORY/issues/$PR_NUMBER/comments"
existing=$(gh api --paginate "$comments" \
  --jq ".[] | select(.body | startswith(\"$marker\")) | .id" | tail -n 1) || existing=""

if [[ -n "$existing" ]]; then
  target=(--method PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$existing")
else
  target=(--method POST "$comments")
fi
if ! gh api "${target[@]}" --input - <<<"$payload" >/dev/null; then
  echo "::warning::could not post the forge diff comment (read-only token on a fork?); it is in the job summary"
fi
