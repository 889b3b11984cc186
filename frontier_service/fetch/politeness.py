"""How long to leave a host alone: the per-domain delay, and when to give up on a dead host."""

from __future__ import annotations

from dataclasses import dataclass

from frontier_service.fetch.result import FetchResult

# After failure 1 wait 5 s, after failure 2 wait 30 s, failure 3 retires the host. A dead
# host costs a minute at most, not the seed's 30 retries x 15 minutes.
DEFAULT_FAILURE_BACKOFF_S = (5.0, 30.0)


def next_delay(
    min_delay: float,
    robots_crawl_delay: float | None,
    crawl_delay_cap: float,
    *, response_time_s: float,
    factor: float,
) -> float:
    """Seconds until the next request to a host.

    The largest of: our minimum, robots.txt's Crawl-delay (trusted only up to the cap, so a
    `Crawl-delay: 86400` cannot park a host for a day), and `factor` x the last response
    time (a slow server gets proportionally more breathing room).
    """
    robots = min(max(robots_crawl_delay or 0.0, 0.0), crawl_delay_cap)
    return max(min_delay, robots, factor * max(response_time_s, 0.0))


@dataclass(frozen=True)
class HealthVerdict:
    """What to do with a host after a fetch outcome."""

    failures: int  # consecutive connection failures/timeouts so far
    retry_in_s: float  # 0 when the host is fine
    retired: bool  # stop crawling this host


def failure_backoff(failures: int, backoff_s: tuple[float, ...]) -> float | None:
    """Wait after the n-th consecutive failure (1-based); None once the host should retire."""
    if failures <= 0:
        return 0.0
    if failures > len(backoff_s):
        return None
    return backoff_s[failures - 1]


class HostHealth:
    """Consecutive-failure bookkeeping per host: back off briefly, then retire the host.

    Only connection failures and timeouts (and 429/503 that outlived the fetcher's own
    retries) should be recorded as failures; a 404 or 500 is an answer, not a dead host.
    Memory holds only hosts currently failing plus the retired ones.
    """

    def __init__(self, backoff_s: tuple[float, ...] = DEFAULT_FAILURE_BACKOFF_S) -> None:
        self.backoff_s = backoff_s
        self._failures: dict[str, int] = {}
        self._retired: set[str] = set()

    def record_success(self, host: str) -> HealthVerdict:
        """The host answered: forget its failures."""
        self._failures.pop(host, None)
        return HealthVerdict(0, 0.0, retired=host in self._retired)

    def record_failure(self, host: str) -> HealthVerdict:
        """The host failed again: how long to back off, or whether to retire it now."""
        failures = self._failures.get(host, 0) + 1
        wait = failure_backoff(failures, self.backoff_s)
        if wait is None:
            self._failures.pop(host, None)
            self._retired.add(host)
            return HealthVerdict(failures, 0.0, retired=True)
        self._failures[host] = failures
        return HealthVerdict(failures, wait, retired=False)

    def record_fetch(self, host: str, result: FetchResult) -> HealthVerdict:
        """Record a fetch outcome: a failure if `result.host_failure`, else a success."""
        return self.record_failure(host) if result.host_failure else self.record_success(host)

    def is_retired(self, host: str) -> bool:
        return host in self._retired

    def failures(self, host: str) -> int:
        return self._failures.get(host, 0)

    @property
    def retired_hosts(self) -> frozenset[str]:
        return frozenset(self._retired)
