"""Where the suite's CPU goes: per test, the CPU seconds and wall seconds it took.

Turn it on with `--cpu-report=FILE` or `CPU_REPORT=FILE` (the root conftest loads this plugin;
elsewhere add `-p tests.helpers.cpu_report`). Each test's setup, call and teardown are
measured in the process that runs them: user + system seconds of that process
(`getrusage(RUSAGE_SELF)`) plus those of the child processes it reaped meanwhile
(`RUSAGE_CHILDREN`: the CLI runs, a server stopped in a teardown), and the wall seconds.
Under pytest-xdist each worker measures its own tests and the numbers travel to the
controller on the test reports, which adds them up. A module- or session-scoped fixture
counts for the test that set it up or tore it down.

At the end the terminal shows the totals and the 20 biggest consumers by module and by test;
FILE gets the same as JSON with every test.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

TOP = 20
_ATTRIBUTE = "cpu_usage"  # on each TestReport; pytest-xdist sends it to the controller


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-report", metavar="FILE", default=os.environ.get("CPU_REPORT") or None,
        help="write each test's CPU and wall seconds to FILE (JSON) and show the biggest "
             "consumers (default: $CPU_REPORT)")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("cpu_report", None)
    if path:
        config.pluginmanager.register(CpuReport(Path(path), config), "cpu_report_recorder")


def _usage() -> tuple[float, float, float, float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime, own.ru_stime, children.ru_utime, children.ru_stime, time.perf_counter())


@dataclass
class ItemCost:
    """The CPU and wall seconds of one test (setup, call and teardown)."""

    nodeid: str
    user: float = 0.0
    system: float = 0.0
    children_user: float = 0.0
    children_system: float = 0.0
    wall: float = 0.0
    outcomes: list[str] = field(default_factory=list)

    @property
    def cpu(self) -> float:
        return self.user + self.system + self.children_user + self.children_system

    @property
    def module(self) -> str:
        return self.nodeid.split("::", 1)[0]

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid, "module": self.module, "cpu_s": round(self.cpu, 3),
            "self_cpu_s": round(self.user + self.system, 3),
            "children_cpu_s": round(self.children_user + self.children_system, 3),
            "wall_s": round(self.wall, 3),
            "outcome": next((o for o in self.outcomes if o != "passed"), "passed"),
        }


class CpuReport:
    """Measures each test where it runs; adds the reports up where the results are shown."""

    def __init__(self, path: Path, config: pytest.Config) -> None:
        self.path = path
        self.config = config
        self.costs: dict[str, ItemCost] = {}
        self._mark = _usage()
        self._started = time.perf_counter()
        self._controller = not hasattr(config, "workerinput")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        self._mark = _usage()  # time between tests (reporting) counts for no test
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
        outcome = yield
        now = _usage()
        setattr(outcome.get_result(), _ATTRIBUTE,
                [after - before for before, after in zip(self._mark, now, strict=True)])
        self._mark = now

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        usage = getattr(report, _ATTRIBUTE, None)
        if not self._controller or usage is None:
            return
        cost = self.costs.setdefault(report.nodeid, ItemCost(report.nodeid))
        cost.user += usage[0]
        cost.system += usage[1]
        cost.children_user += usage[2]
        cost.children_system += usage[3]
        cost.wall += usage[4]
        if report.when == "call" or report.outcome != "passed":
            cost.outcomes.append(report.outcome)

    def summary(self) -> dict[str, Any]:
        """Totals, modules and tests (biggest CPU first) as plain data."""
        tests = sorted(self.costs.values(), key=lambda cost: (-cost.cpu, cost.nodeid))
        modules: dict[str, dict[str, Any]] = {}
        for cost in tests:
            entry = modules.setdefault(cost.module, {"module": cost.module, "tests": 0,
                                                     "cpu_s": 0.0, "wall_s": 0.0})
            entry["tests"] += 1
            entry["cpu_s"] += cost.cpu
            entry["wall_s"] += cost.wall
        by_module = sorted(modules.values(), key=lambda entry: (-entry["cpu_s"], entry["module"]))
        for entry in by_module:
            entry["cpu_s"], entry["wall_s"] = round(entry["cpu_s"], 3), round(entry["wall_s"], 3)
        own = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "totals": {
                "tests": len(tests),
                "cpu_s": round(sum(cost.cpu for cost in tests), 3),
                "self_cpu_s": round(sum(cost.user + cost.system for cost in tests), 3),
                "children_cpu_s": round(sum(cost.children_user + cost.children_system
                                            for cost in tests), 3),
                "test_wall_s": round(sum(cost.wall for cost in tests), 3),
                "session_wall_s": round(time.perf_counter() - self._started, 3),
                "controller_cpu_s": round(own.ru_utime + own.ru_stime, 3),
            },
            "modules": by_module,
            "tests": [cost.as_dict() for cost in tests],
        }

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self._controller:
            return
        data = self.summary()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(data, indent=1) + "\n")
        write = terminalreporter.write_line
        totals = data["totals"]
        terminalreporter.section("CPU report")
        write(f"{totals['tests']} tests: {totals['cpu_s']:.1f} CPU-s ({totals['self_cpu_s']:.1f} in "
              f"pytest, {totals['children_cpu_s']:.1f} in reaped children), {totals['test_wall_s']:.1f} "
              f"test wall-s; session {totals['session_wall_s']:.1f} s wall; all tests in {self.path}")
        write(f"{TOP} biggest by module:   CPU-s   wall-s  tests")
        for entry in data["modules"][:TOP]:
            write(f"  {entry['cpu_s']:9.1f} {entry['wall_s']:8.1f} {entry['tests']:6}  {entry['module']}")
        write(f"{TOP} biggest by test:     CPU-s   wall-s")
        for test in data["tests"][:TOP]:
            write(f"  {test['cpu_s']:9.1f} {test['wall_s']:8.1f}  {test['nodeid']}")
