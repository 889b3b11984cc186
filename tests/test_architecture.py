"""The architecture is a test: every import-linter contract in pyproject.toml is kept.

The contracts (domain code never imports Dagster, the product never imports the test kits,
the wiring sits above the domain, no import cycles, ...) are `[tool.importlinter]` in
pyproject.toml; `make lint` runs the same `lint-imports`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_every_import_contract_is_kept() -> None:
    done = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, f"lint-imports failed:\n{done.stdout}\n{done.stderr}"
    assert "0 broken" in done.stdout, done.stdout
