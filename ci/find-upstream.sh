#!/usr/bin/env bash
# Print the upstream chart data folder CI validates against, or fail with one line saying why.
# FORGE_UPSTREAM wins; otherwise CI has shared/ beside the clone (../shared/upstream).
# Without that data, custom resources and values files would go unchecked and CI would still be
# green, so CI refuses to run without it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n "${FORGE_UPSTREAM:-}" ]]; then
  if [[ ! -d "$FORGE_UPSTREAM" ]]; then
    echo "error: FORGE_UPSTREAM=$FORGE_UPSTREAM is not a folder: point it at the upstream chart data (<chart>-<version>/ folders)" >&2
    exit 2
  fi
  (cd "$FORGE_UPSTREAM" && pwd)
elif [[ -d ../shared/upstream ]]; then
  (cd ../shared/upstream && pwd)
else
  echo "error: no upstream chart data: set FORGE_UPSTREAM=DIR or put shared/upstream beside this clone (../shared/upstream); without it CRDs and chart values go unchecked" >&2
  exit 2
fi
