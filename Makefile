# forge: developer and CI entry points. `make help` lists the targets.
# Everything runs from the pinned venv (requirements.lock) and the pinned, checksum-verified CLI
# tools in tools/bin (ci/tools.json), never from whatever else happens to be installed.

VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
STAMP := $(VENV)/.forge-setup
# tools/bin first, then the venv (forge, kubectl): forge and the tests find the pinned tools.
export PATH := $(CURDIR)/tools/bin:$(CURDIR)/$(VENV)/bin:$(PATH)

.DEFAULT_GOAL := help
.PHONY: help setup generate check render validate scan test bench charts hydrate diff

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  make %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# ---- setup --------------------------------------------------------------------------------------

setup: $(STAMP) ## install the venv (requirements.lock), forge, and helm/kustomize/promtool into tools/bin
	@$(PY) ci/setup_tools.py

# The stamp makes a rerun a no-op until requirements.lock or pyproject.toml changes.
# setup_tools.py runs every time anyway: it is idempotent and fast, and repairs tools/bin.
$(STAMP): requirements.lock pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q -r requirements.lock
	$(PIP) install -q --no-deps -e .
	@touch $@

# ---- forge pipeline -----------------------------------------------------------------------------

generate: setup ## regenerate the generated tree from the inventories
	forge generate

check: setup ## fail if the generated tree is out of date
	forge check

render: setup ## render the overlays with kustomize/helm
	forge render

validate: setup ## validate rendered manifests (FORGE_UPSTREAM=DIR adds the upstream charts/CRDs)
	forge validate $(if $(FORGE_UPSTREAM),--upstream $(FORGE_UPSTREAM))

charts: setup ## fetch the pinned charts into .cache/charts (MIRROR=DIR: from a local mirror, no network)
	forge charts pull $(if $(MIRROR),--from $(MIRROR))

hydrate: setup ## render every component with its real chart as Argo CD does, and validate that (after make charts)
	forge hydrate
	forge validate --hydrated

BASE ?= origin/main
diff: setup ## what the working tree changes on each cluster vs BASE (default origin/main), risks first
	@forge diff --base $(BASE) || test $$? -eq 1  # exit 1 = "there are changes", not a failure here

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
	$(PY) -m pytest -q

bench: setup ## run the benchmarks
	forge bench

# ---- more targets go here (keep `## description` on the target line so `make help` lists it) ----
