"""When each host was asked: as the test web saw it, and as the crawler sent it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from pathlib import Path
from urllib.parse import urlsplit

from archive_testkit.testweb import RequestRecord
from frontier_service.archiving import iter_records

# The crawler's page records round request times to 1 ms.
RECORD_ROUNDING_S = 0.001


def server_arrivals(records: Iterable[RequestRecord], hosts: Collection[str]
                    ) -> dict[str, list[float]]:
    """Arrival times per host, sorted (the test web's clock)."""
    arrivals: dict[str, list[float]] = defaultdict(list)
    for record in records:
        if record.host in hosts:
            arrivals[record.host].append(record.time)
    return {host: sorted(times) for host, times in arrivals.items()}


def crawler_starts(data_dir: Path, hosts: Collection[str]) -> dict[str, list[float]]:
    """Request start times per host from the crawl's page records, sorted. With several
    requests in flight per host these are what the delay governs: a record's time is the
    start the crawler granted, the instant its delay counts from (the test web runs in the
    test's process, so its arrival times jitter by a few ms under load, and so would a
    stamp taken when the request is sent, a scheduler's pause after the grant)."""
    return {host: [at for at, _ in sent] for host, sent in crawler_requests(data_dir, hosts).items()}


def crawler_requests(data_dir: Path, hosts: Collection[str]) -> dict[str, list[tuple[float, str]]]:
    """`crawler_starts` with each request's URL: (start, URL) per host, sorted."""
    starts: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for page in iter_records(data_dir / "sessions"):
        for request in page["requests"]:
            host = urlsplit(request["url"]).hostname or ""
            if host in hosts:
                starts[host].append((request["timestamp"], request["url"]))
    return {host: sorted(sent) for host, sent in starts.items()}


def most_in_any_window(times: list[float], window_s: float) -> int:
    """The most arrivals within any half-open window of `window_s`."""
    times = sorted(times)
    most, first = 0, 0
    for last, at in enumerate(times):
        while at - times[first] >= window_s:
            first += 1
        most = max(most, last - first + 1)
    return most
