"""The CPU report plugin: every test's CPU seconds (its own and its reaped children's) and wall
seconds, added up across pytest-xdist workers, the biggest consumers shown and written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TINY = '''
import subprocess, sys, time

def test_burns_cpu_here():
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass

def test_burns_cpu_in_a_child():
    subprocess.run([sys.executable, "-c",
                    "import time\\nend = time.process_time() + 0.3\\nwhile time.process_time() < end: pass"],
                   check=True)

def test_sleeps():
    time.sleep(0.2)
'''


def _check(report: dict, folder: str) -> None:
    tests = {test["nodeid"].split("::")[-1]: test for test in report["tests"]}
    assert set(tests) == {"test_burns_cpu_here", "test_burns_cpu_in_a_child", "test_sleeps"}
    assert tests["test_burns_cpu_here"]["self_cpu_s"] >= 0.25
    assert tests["test_burns_cpu_in_a_child"]["children_cpu_s"] >= 0.25
    assert tests["test_sleeps"]["cpu_s"] < 0.15 and tests["test_sleeps"]["wall_s"] >= 0.19
    assert [test["cpu_s"] for test in report["tests"]] == sorted(
        (test["cpu_s"] for test in report["tests"]), reverse=True)
    assert report["totals"]["tests"] == 3
    assert report["totals"]["cpu_s"] == pytest.approx(sum(t["cpu_s"] for t in report["tests"]), abs=0.01)
    assert report["modules"] == [{"module": f"{folder}test_tiny.py", "tests": 3,
                                  "cpu_s": pytest.approx(report["totals"]["cpu_s"], abs=0.01),
                                  "wall_s": pytest.approx(report["totals"]["test_wall_s"], abs=0.01)}]


def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pytest subprocess runs in a temporary folder: let it import tests.helpers."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def test_the_report_adds_up_the_workers_of_pytest_xdist(pytester: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _importable(monkeypatch)
    pytester.makepyfile(test_tiny=TINY)
    out = pytester.path / "cpu.json"
    result = pytester.runpytest_subprocess("-p", "tests.helpers.cpu_report", f"--cpu-report={out}",
                                           "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*CPU report*", "3 tests: * CPU-s (* in pytest, * in reaped children)*",
                                 "20 biggest by module:*", "*test_tiny.py", "20 biggest by test:*",
                                 "*test_tiny.py::test_burns_cpu_*"])
    _check(json.loads(out.read_text()), "")


def test_the_report_without_xdist_and_from_the_environment(pytester: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_tiny=TINY)
    out = pytester.path / "reports" / "cpu.json"
    monkeypatch.setenv("CPU_REPORT", str(out))
    _importable(monkeypatch)
    result = pytester.runpytest_subprocess("-p", "tests.helpers.cpu_report", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    _check(json.loads(out.read_text()), "")


@pytest.mark.unit
def test_no_report_unless_asked(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CPU_REPORT", raising=False)
    pytester.makepyfile(test_tiny="def test_one():\n    pass\n")
    result = pytester.runpytest("-p", "tests.helpers.cpu_report", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "CPU report" not in result.stdout.str()
    assert not list(Path(pytester.path).glob("*.json"))
