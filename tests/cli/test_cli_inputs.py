"""Numeric options, prefixes and misses, as a person types them: a bad number is one usage
line (exit 2, never a traceback), a miss exits 1, a hex prefix reads in either case."""

from __future__ import annotations

import click
import pytest

from archive_pipelines.cli.option_types import COUNT, DAYS, FRACTION, HOURS, MAX_COUNT
from tests.helpers.cli import run_cli


@pytest.mark.unit
@pytest.mark.parametrize(("kind", "value"), [
    (HOURS, "nan"), (HOURS, "inf"), (HOURS, "-5"), (HOURS, "1e300"), (DAYS, "-inf"),
    (FRACTION, "nan"), (FRACTION, "0"), (FRACTION, "1.5"),
    (COUNT, "0"), (COUNT, "-1"), (COUNT, str(MAX_COUNT + 1)), (COUNT, "1.5"),
])
def test_a_bad_number_is_refused(kind: click.ParamType, value: str) -> None:
    with pytest.raises(click.BadParameter):
        kind.convert(value, None, None)


@pytest.mark.unit
@pytest.mark.parametrize(("kind", "value", "expected"), [
    (HOURS, "0", 0.0), (HOURS, "24", 24.0), (DAYS, "0.5", 0.5), (FRACTION, "1", 1.0),
    (FRACTION, "0.01", 0.01), (COUNT, "1", 1), (COUNT, str(MAX_COUNT), MAX_COUNT),
])
def test_a_good_number_is_taken(kind: click.ParamType, value: str, expected: float) -> None:
    assert kind.convert(value, None, None) == expected


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    data = tmp_path_factory.mktemp("inputs") / "data"
    assert run_cli("--data-dir", str(data), "init").returncode == 0
    return str(data)


@pytest.mark.parametrize("args", [
    ["gc", "--grace-hours", "nan"], ["gc", "--grace-hours", "-5"],
    ["gc", "--dry-run", "--grace-hours", "inf"],
    ["compact-crawls", "--older-than", "nan"], ["scrub", "--sample", "nan"],
    ["replication-status", "--sample", "inf"], ["replicate", "--max-batches", "0"],
    ["captures", "--sha256", "0" * 64, "--limit", "99999999999999999999"],
    ["migrate-to-cas", "--batch-size", "0"], ["update", "--batch-size", "-3"],
    ["scrub", "--prefix", "0g"],
])
def test_a_bad_number_or_prefix_is_one_usage_error(data_dir: str, args: list[str]) -> None:
    done = run_cli("--data-dir", data_dir, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "Error: Invalid value for" in done.stderr


def test_a_scrub_prefix_reads_in_either_case(data_dir: str) -> None:
    done = run_cli("--data-dir", data_dir, "scrub", "--prefix", "0A", "--json")
    assert done.returncode == 0, done.stderr
    assert '"prefix": "0a"' in done.stdout


@pytest.mark.parametrize("args", [["show", "nosuch"], ["show", "1700000000"],
                                  ["captures", "--sha256", "0" * 64],
                                  ["captures", "--session", "0123abcd"],
                                  ["compact-crawls", "--session", "0123abcd"]])
def test_a_miss_exits_1(data_dir: str, args: list[str]) -> None:
    done = run_cli("--data-dir", data_dir, *args)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr


def test_gc_takes_a_grace_of_0(data_dir: str) -> None:
    done = run_cli("--data-dir", data_dir, "gc", "--dry-run", "--grace-hours", "0")
    assert done.returncode == 0, done.stderr
    assert "unreferenced blobs within the grace (0 h): 0;" in done.stdout
