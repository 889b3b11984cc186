"""The demo's closing hint opens Dagit on the data dir the demo used."""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("archive_demo_hint", ROOT / "scripts" / "demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.unit
def test_the_hint_names_a_data_dir_other_than_the_default() -> None:
    demo = _demo()
    assert demo.dev_command((ROOT / "demo-data").resolve()) == "make dev"
    assert demo.dev_command(Path("/tmp/my demo")) == "make dev DEMO_DATA='/tmp/my demo'"


def test_make_dev_runs_on_the_data_dir_the_hint_names(tmp_path: Path) -> None:
    data = tmp_path / "other data"
    command = shlex.split(_demo().dev_command(data))
    assert command[:2] == ["make", "dev"]
    dry = subprocess.run([*command[:1], "-n", *command[1:]], cwd=ROOT, capture_output=True,
                         text=True, check=True)  # prints the recipe, runs nothing
    assert f'--data-dir "{data}" init' in dry.stdout
    assert f'ARCHIVE_DATA_DIR="{data}" DAGSTER_HOME="{data}/dagster"' in dry.stdout
