"""The file order handed to the xdist workers: longest files first, each file's tests together
and in pytest's order; and the table it reads is the one scripts/test_file_seconds.py writes."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.file_order import DEFAULT_S, TABLE, load_seconds, longest_first

REPO = Path(__file__).resolve().parents[1]


@dataclass
class _Item:
    nodeid: str


@pytest.mark.unit
def test_files_go_longest_first_and_keep_their_tests_in_order() -> None:
    names = ["a.py::t1", "a.py::t2", "b.py::t1", "c.py::t1", "c.py::t2", "d.py::t1"]
    items = [_Item(name) for name in names]
    seconds = {"a.py": 1.0, "c.py": 300.0, "d.py": DEFAULT_S + 1}
    ordered = [item.nodeid for item in longest_first(items, seconds)]  # type: ignore[arg-type]
    # b.py is not in the table: it counts as DEFAULT_S, between d.py and a.py.
    assert ordered == ["c.py::t1", "c.py::t2", "d.py::t1", "b.py::t1", "a.py::t1", "a.py::t2"]


@pytest.mark.unit
def test_the_checked_in_table_names_existing_files(tmp_path: Path) -> None:
    seconds = load_seconds()
    assert seconds, TABLE
    missing = [name for name in seconds if not (REPO / name).is_file()]
    assert missing == [], "refresh tests/file_seconds.json (tests/helpers/file_order.py)"
    assert load_seconds(tmp_path / "none.json") == {}


def test_the_table_is_made_from_a_cpu_report(tmp_path: Path) -> None:
    report = tmp_path / "cpu.json"
    report.write_text(json.dumps({"modules": [
        {"module": "tests/x.py", "tests": 2, "cpu_s": 1.0, "wall_s": 2.04},
        {"module": "tests/y.py", "tests": 1, "cpu_s": 9.0, "wall_s": 30.0}]}))
    done = subprocess.run([sys.executable, "scripts/test_file_seconds.py", str(report)],
                          cwd=REPO, capture_output=True, text=True, check=True)
    assert list(json.loads(done.stdout).items()) == [("tests/y.py", 30.0), ("tests/x.py", 2.0)]
