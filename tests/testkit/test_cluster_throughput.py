"""The cluster bench's figures: rates, the 2-worker / 1-worker ratio, CPU per object and what
a worker machine would add."""

from __future__ import annotations

import pytest

from archive_testkit.cluster_throughput import (
    CaseFigures,
    cores_busy,
    cpu_per_run,
    interpretation,
    rate,
    scaling,
    significant,
    worker_machine_rate,
)

pytestmark = pytest.mark.unit

ONE = CaseFigures(label="1 worker", workers=1, runs=16, objects=1000, wall_s=100.0,
                  cpu_s={"workers": 20.0, "daemon": 48.0, "postgres": 12.0},
                  run_s=(10.0, 30.0, 20.0))
TWO = CaseFigures(label="2 workers", workers=2, runs=16, objects=1000, wall_s=62.5,
                  cpu_s={"workers": 25.0, "daemon": 64.0, "postgres": 11.0})


@pytest.mark.parametrize(("count", "seconds", "expected"),
                         [(1000, 100.0, 10.0), (5, 0.5, 10.0), (7, 0.0, 0.0), (0, 3.0, 0.0)])
def test_rate_is_per_second_and_zero_when_no_time_passed(count: int, seconds: float,
                                                         expected: float) -> None:
    assert rate(count, seconds) == pytest.approx(expected)


def test_a_case_gives_objects_and_runs_per_second_cpu_per_object_and_the_median_run() -> None:
    assert ONE.objects_per_s == pytest.approx(10.0)
    assert ONE.runs_per_s == pytest.approx(0.16)
    assert ONE.cpu_total_s == pytest.approx(80.0)
    assert ONE.cpu_ms_per_object() == pytest.approx(80.0)
    assert ONE.cpu_ms_per_object("workers") == pytest.approx(20.0)
    assert ONE.cpu_ms_per_object("absent") == 0.0
    assert ONE.median_run_s == 20.0
    assert TWO.median_run_s == 0.0  # no runs timed


def test_nothing_copied_gives_no_cpu_per_object_and_no_machine_rate() -> None:
    empty = CaseFigures(label="x", workers=1, runs=0, objects=0, wall_s=0.0,
                        cpu_s={"workers": 3.0})
    assert empty.cpu_ms_per_object() == 0.0
    assert worker_machine_rate(empty, cores=8) == 0.0
    assert cpu_per_run(empty, "daemon") == 0.0


def test_scaling_is_two_workers_rate_over_one() -> None:
    assert scaling(ONE, TWO) == pytest.approx(1.6)
    assert scaling(TWO, ONE) == pytest.approx(0.625)


@pytest.mark.parametrize(("cores", "expected"), [(1, 40.0), (2, 80.0), (16, 640.0)])
def test_a_worker_machine_copies_its_cores_over_the_workers_cpu_per_object(
        cores: int, expected: float) -> None:
    # 25 CPU s of the workers over 1000 objects: 25 ms each, 40 objects/s per core.
    assert worker_machine_rate(TWO, cores=cores) == pytest.approx(expected)


def test_cpu_per_run_is_per_kind_of_process() -> None:
    assert cpu_per_run(TWO, "daemon") == pytest.approx(4.0)
    assert cpu_per_run(TWO, "workers") == pytest.approx(25.0 / 16)
    assert cpu_per_run(TWO, "absent") == 0.0


def test_the_interpretation_names_the_second_workers_gain_and_a_machines_bound() -> None:
    line = interpretation(ONE, TWO, cores=2)
    assert line.startswith("CPU-bound (80% of 2 cores busy with our processes, 2 workers;")
    assert "added 6.00 objects/s (1.60x)" in line
    assert "2 cores would add up to 80.0 objects/s" in line
    assert "(25.0 ms per object, 1.56 s per run of 62.5 objects:" in line
    assert "the daemon's machine spends 4.00 CPU s per run" in line
    assert interpretation(ONE, TWO, cores=16).startswith("not CPU-bound (10% of 16 cores")


def test_cores_busy_is_the_cases_cpu_over_its_wall_time_on_every_core() -> None:
    assert cores_busy(TWO, cores=2) == pytest.approx(0.8)
    assert cores_busy(ONE, cores=1) == pytest.approx(0.8)


@pytest.mark.parametrize(("value", "expected"), [
    (12345.6, "12,346"), (123.4, "123"), (14.24, "14.2"), (1.0, "1.00"), (0.03124, "0.0312"),
    (-2.5, "-2.50"), (0.0, "0"), (float("inf"), "inf")])
def test_significant_keeps_three_digits_whatever_the_size(value: float, expected: str) -> None:
    assert significant(value) == expected
