"""The per-domain delay formula and dead-host bookkeeping: pure, no network."""

from __future__ import annotations

import pytest

from frontier_service.fetch import FetchErrorKind, FetchResult, HostHealth, next_delay
from frontier_service.fetch.politeness import failure_backoff

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("min_delay", "robots", "cap", "response_time", "factor", "expected"),
    [
        (1.0, None, 30.0, 0.1, 10.0, 1.0),  # the minimum wins
        (1.0, 2.0, 30.0, 0.1, 10.0, 2.0),  # robots Crawl-delay
        (1.0, 86_400.0, 30.0, 0.1, 10.0, 30.0),  # ... trusted only up to the cap
        (1.0, 2.0, 30.0, 0.5, 10.0, 5.0),  # a slow server: factor x response time
        (1.0, 0.0, 30.0, 0.0, 10.0, 1.0),  # Crawl-delay 0 changes nothing
        (0.0, None, 30.0, 0.0, 10.0, 0.0),
        (1.0, -5.0, 30.0, -1.0, 10.0, 1.0),  # nonsense inputs never go below the minimum
        (0.5, 40.0, 30.0, 4.0, 10.0, 40.0),  # response time beyond the cap still counts
    ],
)
def test_next_delay(
    min_delay: float,
    robots: float | None,
    cap: float,
    response_time: float,
    factor: float,
    expected: float,
) -> None:
    delay = next_delay(min_delay, robots, cap, response_time_s=response_time, factor=factor)
    assert delay == pytest.approx(expected)


@pytest.mark.parametrize(("failures", "expected"), [(0, 0.0), (1, 5.0), (2, 30.0), (3, None), (30, None)])
def test_failure_backoff_is_short_then_retires(failures: int, expected: float | None) -> None:
    assert failure_backoff(failures, (5.0, 30.0)) == expected


def test_host_retired_after_three_consecutive_failures() -> None:
    health = HostHealth()
    first, second, third = (health.record_failure("dead.test") for _ in range(3))
    assert (first.retry_in_s, first.retired) == (5.0, False)
    assert (second.retry_in_s, second.retired) == (30.0, False)
    assert third.retired and third.failures == 3
    assert health.is_retired("dead.test")
    assert health.retired_hosts == {"dead.test"}
    assert not health.is_retired("other.test")


def test_success_resets_the_count() -> None:
    health = HostHealth(backoff_s=(1.0,))
    health.record_failure("flaky.test")
    assert health.failures("flaky.test") == 1
    assert health.record_success("flaky.test").failures == 0
    assert health.failures("flaky.test") == 0
    assert not health.record_failure("flaky.test").retired  # counted from zero again
    assert health.record_failure("flaky.test").retired


def _result(status: int | None, kind: FetchErrorKind | None = None) -> FetchResult:
    error = None if kind is None else f"{kind} trouble"
    return FetchResult(
        url="http://x.test/", final_url="http://x.test/", status=status, error=error, error_kind=kind
    )


@pytest.mark.parametrize(
    ("result", "counts_as_failure"),
    [
        (_result(None, FetchErrorKind.CONNECT), True),
        (_result(None, FetchErrorKind.TIMEOUT), True),
        (_result(503), True),
        (_result(429), True),
        (_result(200), False),
        (_result(404), False),
        (_result(500), False),  # an answer, not a dead host
        (_result(302, FetchErrorKind.REDIRECT_LOOP), False),
    ],
)
def test_record_fetch_counts_only_host_failures(result: FetchResult, counts_as_failure: bool) -> None:
    health = HostHealth()
    assert health.record_fetch("x.test", result).failures == int(counts_as_failure)
