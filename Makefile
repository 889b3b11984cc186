# archive-pipelines. Quickstart: `make demo`, `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
DEMO_DATA ?= $(CURDIR)/demo-data
PORT   ?= 3000
# Three pytest workers on this 2-core box: many tests wait on servers, subprocesses and
# Dagster runs, so two workers left the CPU idle half the time (2026-11-28: 22:50 for 4,240
# tests with 3 workers, 34 CPU-minutes). `make test TEST_WORKERS=1` runs it in one process.
# A module's tests stay on one worker (--dist loadfile): module fixtures such as Dagit start once.
TEST_WORKERS ?= 3

.PHONY: venv system-deps demo cluster test test-unit test-fast dev dev-port-free screenshots bench lint clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "archive-pipelines needs Python >= 3.11 (set PYTHON=python3.11)")'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { echo "error: '$(PYTHON) -m venv' failed: install python3-venv (apt-get install python3-venv)"; exit 1; }
	@echo "installing archive-pipelines and its dependencies into $(VENV) ..."
	@$(BIN)/pip install -q --disable-pip-version-check --upgrade pip setuptools wheel
	@$(BIN)/pip install -q --disable-pip-version-check -e '.[dev]'
	@rm -f $(VENV)/.installed-*
	@touch $@

system-deps:
	@bash scripts/ensure-system-deps.sh

demo: venv
	@$(BIN)/python scripts/demo.py --data-dir "$(DEMO_DATA)"

# The cluster profile on this machine: PostgreSQL, Redis, moto (S3), two Celery workers,
# dagster-daemon, Dagit, the replay server and a crawler; Ctrl-C stops them all.
CLUSTER_DIR ?= $(CURDIR)/cluster-data
cluster: venv system-deps
	@$(BIN)/python scripts/cluster.py --dir "$(CLUSTER_DIR)" --port "$(PORT)"

test: venv system-deps
	@$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The loop to run after every edit: no servers, no subprocesses (tests/helpers/unit_guard.py).
test-unit: venv
	@$(BIN)/pytest -q -m unit

test-fast: venv system-deps
	@$(BIN)/pytest -q -m "not slow"

# Dagit and its daemon on the demo data dir: `make dev PORT=3001` when 3000 is taken; Ctrl-C stops both.
dev: dev-port-free venv
	@$(BIN)/archive-pipelines --data-dir "$(DEMO_DATA)" init >/dev/null
	@echo "Dagit: http://127.0.0.1:$(PORT)  (data dir $(DEMO_DATA); Ctrl-C stops it)"
	@ARCHIVE_DATA_DIR="$(DEMO_DATA)" DAGSTER_HOME="$(DEMO_DATA)/dagster" \
		exec $(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p "$(PORT)"

# Before anything starts: a taken port would leave the daemon running without its webserver.
dev-port-free:
	@$(PYTHON) -c 'import socket, sys; s = socket.socket(); \
	s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1])))' \
	"$(PORT)" 2>/dev/null || { echo "error: port $(PORT) on 127.0.0.1 is taken (or not a port number): \
	stop what uses it, or choose another (make dev PORT=3001)" >&2; exit 1; }

# Refresh the Dagit screenshots under docs/img/ that the README shows (the UI tests take them).
screenshots: venv system-deps
	@UI_SCREENSHOTS_DIR="$(CURDIR)/docs/img" $(BIN)/pytest -q -m ui tests/ui

bench: venv system-deps
	@bash scripts/ensure-bench-deps.sh
	@$(BIN)/pip install -q --disable-pip-version-check -e '.[dev,bench]'
	@$(BIN)/python bench/run_all.py

lint: venv
	@$(BIN)/ruff check .
	@$(BIN)/mypy
	@$(BIN)/lint-imports

clean:
	rm -rf $(VENV) demo-data cluster-data .pytest_cache .mypy_cache .ruff_cache
