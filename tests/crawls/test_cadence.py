"""A crawl definition's cadence, checked without Dagster, as Dagster's schedules read it."""

import pytest
from dagster._utils.schedules import is_valid_cron_string

from archive_pipelines.crawls.cadence import cadence_problem

pytestmark = pytest.mark.unit

VALID = ["0 3 * * 1", "*/15 * * * *", "0 0 1 * *", "30 2 * * mon-fri", "0 6,18 * * *",
         "0 0 * jan,jul sun", "5/10 * * * *", "0 0 * * 7", "59 23 31 12 6", "0 0 29 2 *",
         "@hourly", "@daily", "@weekly", "@monthly", " 0 3 * * 1 "]
INVALID = [
    ("", "0 field(s)"),
    ("0 3 * *", "4 field(s)"),
    ("0 3 * * 1 2024", "6 field(s)"),
    ("60 * * * *", "minute '60': 60 is outside 0-59"),
    ("* 24 * * *", "hour '24'"),
    ("* * 0 * *", "day of month '0'"),
    ("* * * 13 *", "month '13'"),
    ("* * * * 8", "day of week '8'"),
    ("* * * foo *", "'foo' is not a number or a name (jan,"),
    ("*/0 * * * *", "a step is at least 1"),
    ("5-1 * * * *", "ends before it starts"),
    ("0 0 30 2 *", "never runs: February has no day 30"),
    ("0 0 30,31 feb *", "never runs"),
    ("@yearly", "not a known shorthand"),
    ("@every 5m", "not a known shorthand"),
    ("1,,2 * * * *", "'' is not *"),
    ("? * * * *", "'?' is not *"),
]


@pytest.mark.parametrize("cadence", VALID)
def test_a_cadence_dagster_runs_is_accepted(cadence: str) -> None:
    assert cadence_problem(cadence) is None
    assert is_valid_cron_string(cadence.strip())


@pytest.mark.parametrize(("cadence", "expected"), INVALID)
def test_a_cadence_that_cannot_run_says_why(cadence: str, expected: str) -> None:
    problem = cadence_problem(cadence)
    assert problem is not None
    assert expected in problem


# Stricter than Dagster on purpose: a reversed range wraps around there (5-1 = 5..59, 0..1),
# which a reader rarely means, and Feb 30/31 in a list is accepted there but never runs.
STRICTER = {"5-1 * * * *", "0 0 30,31 feb *"}


@pytest.mark.parametrize("cadence", [c for c, _ in INVALID if not c.startswith("@")])
def test_what_is_refused_dagster_refuses_too(cadence: str) -> None:
    """Never stricter than meant on cron strings: Dagster would not run the others either."""
    assert is_valid_cron_string(cadence) is (cadence in STRICTER)
