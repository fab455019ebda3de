# OpenBrowse: `make run` sets up everything that is missing and starts the server on 127.0.0.1:8420;
# `make test` sets up the same and runs the whole suite. Both are safe to repeat.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# postgresql and nginx-light: the tests start a throwaway PostgreSQL (tests/support/postgres.py) and nginx in front of
# two nodes (deploy/nginx.conf); the product needs neither.
APT_PACKAGES := chromium xvfb x11vnc websockify novnc fonts-dejavu-core fonts-liberation bubblewrap socat iproute2 ffmpeg fontconfig postgresql nginx-light
PYTEST_ARGS ?=
# Test files run in parallel workers (most of a test is spent waiting on browsers and servers, not on a core), the
# slow files first (tests/support/ordering.py), which xdist's own reordering would undo.
TEST_WORKERS ?= 2
# `make test` installs every tool the suite needs, so a test may not skip for lack of one: with CI set it fails
# instead (tests/support/ci_gate.py). `make test CI=` gives a machine without them the skips back.
CI ?= 1

.PHONY: run test test-stress check lint types e2e deps system-deps venv clean bench lock bytecode

run: deps
	$(BIN)/python -m openbrowse serve

# Every server a test starts (about 140 in a run) imports the package: compiled once here, not once per process
# (with PYTHONDONTWRITEBYTECODE set, Python would never keep what it compiled).
bytecode:
	$(BIN)/python -m compileall -q openbrowse tests

test: deps bytecode
	CI=$(CI) $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The whole suite while stress-ng keeps every core busy (STRESS_LOAD percent each): waits must be on events, not time.
STRESS_LOAD ?= 60
test-stress: deps bytecode
	$(MAKE) system-deps APT_PACKAGES="$(APT_PACKAGES) stress-ng"
	@stress-ng --cpu 0 --cpu-load $(STRESS_LOAD) --quiet & stress=$$!; \
	CI=$(CI) $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS); status=$$?; \
	kill $$stress; wait $$stress 2>/dev/null; exit $$status

check: deps
	$(BIN)/ruff format --check openbrowse tests bench
	$(BIN)/ruff check openbrowse tests bench
	$(BIN)/mypy openbrowse tests bench
	$(BIN)/lint-imports

bench: deps
	$(MAKE) system-deps APT_PACKAGES="$(APT_PACKAGES) wrk"
	$(BIN)/python bench/run_all.py

deps: system-deps venv

# Debian packages: only installed when one of them is missing. npm (for the test-only Node clients, such as
# OpenClaw's) comes from Debian only when the machine has none of its own.
system-deps:
	@missing=""; \
	for pkg in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$pkg"; \
	done; \
	$(PYTHON) -c 'import ensurepip' 2>/dev/null || missing="$$missing python3-venv"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO="sudo"; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

venv: $(STAMP)

$(STAMP): pyproject.toml requirements-dev.lock
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --require-hashes -r requirements-dev.lock
	$(BIN)/python -m pip install -q --no-deps -e .
	@touch $(STAMP)

# Regenerate the hashed locks after changing dependencies in pyproject.toml (existing pins are kept where they can
# be): requirements.lock for the server alone (the Docker image), requirements-dev.lock with the dev tools too.
UV_COMPILE = $(BIN)/uv pip compile pyproject.toml --generate-hashes --python-version 3.11.7 \
	--python-platform x86_64-unknown-linux-gnu
lock: venv
	$(UV_COMPILE) -o requirements.lock
	$(UV_COMPILE) --extra dev -c requirements.lock -o requirements-dev.lock

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
