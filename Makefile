# archive-pipelines. Quickstart: `make demo`, `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
DEMO_DATA ?= $(CURDIR)/demo-data

.PHONY: venv system-deps demo test test-fast dev bench lint clean

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

test: venv system-deps
	@$(BIN)/pytest -q

test-fast: venv system-deps
	@$(BIN)/pytest -q -m "not slow"

dev: venv
	@$(BIN)/archive-pipelines --data-dir "$(DEMO_DATA)" init >/dev/null
	@echo "Dagit: http://127.0.0.1:3000  (data dir $(DEMO_DATA))"
	@ARCHIVE_DATA_DIR="$(DEMO_DATA)" DAGSTER_HOME="$(DEMO_DATA)/dagster" \
		$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

bench: venv system-deps
	@bash scripts/ensure-bench-deps.sh
	@$(BIN)/pip install -q --disable-pip-version-check -e '.[dev,bench]'
	@$(BIN)/python bench/run_all.py

lint: venv
	@$(BIN)/ruff check .
	@$(BIN)/mypy
	@$(BIN)/lint-imports

clean:
	rm -rf $(VENV) demo-data .pytest_cache .mypy_cache .ruff_cache
