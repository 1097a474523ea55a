# forge: developer and CI entry points. `make help` lists the targets.
# Everything runs from the pinned venv (requirements.lock) and the pinned, checksum-verified CLI
# tools in tools/bin (ci/tools.json), never from whatever else happens to be installed.

VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
STAMP := $(VENV)/.forge-setup
# tools/bin first, then the venv (forge, kubectl): forge and the tests find the pinned tools.
export PATH := $(CURDIR)/tools/bin:$(CURDIR)/$(VENV)/bin:$(PATH)

# Upstream chart data (CRDs, chart values; never copied here): FORGE_UPSTREAM, else shared/upstream
# beside this clone, as CI finds it (ci/find-upstream.sh). Without it, validate and the tests skip
# checks, and say so.
ifeq ($(FORGE_UPSTREAM),)
FORGE_UPSTREAM := $(abspath $(wildcard $(CURDIR)/../shared/upstream))
endif
export FORGE_UPSTREAM
NO_UPSTREAM = @$(if $(FORGE_UPSTREAM),:,echo "note: no upstream chart data (FORGE_UPSTREAM unset, no ../shared/upstream): CRDs and chart values go unchecked and their tests skip; set FORGE_UPSTREAM=DIR" >&2)

.DEFAULT_GOAL := help
.PHONY: help setup generate check render validate scan test bench charts hydrate diff fuzz twin

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  make %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# ---- setup --------------------------------------------------------------------------------------

setup: $(STAMP) ## install the venv (requirements.lock), forge, and helm/kustomize/promtool/amtool into tools/bin
	@$(PY) ci/setup_tools.py

# The stamp makes a rerun a no-op until requirements.lock or pyproject.toml changes.
# setup_tools.py runs every time anyway: it is idempotent and fast, and repairs tools/bin.
$(STAMP): requirements.lock pyproject.toml
	@echo "setup 1/4: Python venv in $(VENV)/"
	@test -x $(PY) || python3 -m venv $(VENV)
	@echo "setup 2/4: pinned packages from requirements.lock (pytest, hypothesis, pre-commit, ...)"
	@$(PIP) install -q -r requirements.lock
	@echo "setup 3/4: forge itself (editable)"
	@$(PIP) install -q --no-deps -e .
	@touch $@
	@echo "setup 4/4: pinned helm, kustomize, promtool, amtool in tools/bin"

# ---- forge pipeline -----------------------------------------------------------------------------

generate: setup ## regenerate the generated tree from the inventories
	forge generate

check: setup ## fail if the generated tree is out of date
	forge check

render: setup ## render the overlays with kustomize/helm
	forge render

validate: setup ## validate rendered manifests (with FORGE_UPSTREAM or ../shared/upstream: the upstream charts/CRDs too)
	$(NO_UPSTREAM)
	forge validate $(if $(FORGE_UPSTREAM),--upstream $(FORGE_UPSTREAM))

charts: setup ## fetch the pinned charts into .cache/charts (MIRROR=DIR: from a local mirror, no network)
	forge charts pull $(if $(MIRROR),--from $(MIRROR))

hydrate: setup ## render every component with its real chart as Argo CD does, and validate that (after make charts)
	forge hydrate
	forge validate --hydrated

BASE ?= origin/main
diff: setup ## what the working tree changes on each cluster vs BASE (default origin/main), risks first
	@forge diff --base $(BASE) || test $$? -eq 1  # exit 1 = "there are changes", not a failure here; 2 and 130 (Ctrl-C) fail

# ---- the fleet in a box -------------------------------------------------------------------------

# Every cluster with scenarios (clusters/<c>/scenarios.yaml); TWIN_CLUSTERS="h200" for one.
TWIN_CLUSTERS ?= $(sort $(patsubst clusters/%/scenarios.yaml,%,$(wildcard clusters/*/scenarios.yaml)))
twin: setup ## the fleet in a box (docs/twin.md): per cluster, start a real control plane and Kueue, apply, run its scenarios, stop
	$(NO_UPSTREAM)
	forge render
	@set -e; for c in $(TWIN_CLUSTERS); do forge twin run $$c $(if $(FORGE_UPSTREAM),--upstream $(FORGE_UPSTREAM)); done

# ---- security scan ------------------------------------------------------------------------------

# checkov in its own venv (ci/scan.lock says why), rebuilt only when its lock changes.
SCAN_VENV := .venv-scan
SCAN_STAMP := $(SCAN_VENV)/.forge-setup

$(SCAN_STAMP): ci/scan.lock
	@test -x $(SCAN_VENV)/bin/python || python3 -m venv $(SCAN_VENV)
	$(SCAN_VENV)/bin/python -m pip --disable-pip-version-check install -q -r ci/scan.lock
	@touch $@

scan: $(SCAN_STAMP) ## checkov over build/rendered (and build/hydrated if present) with the reviewed skips in ci/checkov-skips.yaml (after make render)
	$(SCAN_VENV)/bin/python ci/scan.py build/rendered $(wildcard build/hydrated)

# ---- tests and benchmarks -----------------------------------------------------------------------

test: setup ## run the test suite
	$(NO_UPSTREAM)
	$(PY) -m pytest -q

FUZZ_EXAMPLES ?= 10000
fuzz: setup ## fuzz the inventory loader, the other data files and the chart reader: FUZZ_EXAMPLES (10,000) per property
	FORGE_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) FORGE_FUZZ_GENERATE=25 $(PY) -m pytest -q -p no:cacheprovider --hypothesis-show-statistics tests/fuzz

bench: setup ## run the benchmarks
	forge bench

# ---- more targets go here (keep `## description` on the target line so `make help` lists it) ----
