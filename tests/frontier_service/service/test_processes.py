"""Several crawler processes on one frontier: exactly-once, politeness, drain, a dying child."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from archive_testkit.testweb import TestWeb
from frontier_service.archiving import iter_records
from frontier_service.metrics import CrawlMetrics, combine_metrics
from frontier_service.service.stop_report import NOTHING_LEFT_TO_FETCH
from frontier_service.service.supervisor import CrawlerSupervisor, resolve_processes, split_concurrency
from tests.frontier_service.service.cli_runs import (
    crawl_args,
    finish,
    start,
    visited_queue,
    wait_for_pages,
)
from tests.frontier_service.service.request_times import (
    RECORD_ROUNDING_S,
    crawler_starts,
    server_arrivals,
)
from tests.frontier_service.service.web import ALIVE, SEEDS, crawler_settings, expected_delay

_CLOCK_SLACK_S = 0.002


@pytest.mark.parametrize(("total", "processes", "shares"), [
    (512, 2, [256, 256]), (14, 3, [5, 5, 4]), (3, 3, [1, 1, 1]),
])
def test_concurrency_is_shared_out(total: int, processes: int, shares: list[int]) -> None:
    assert split_concurrency(total, processes) == shares


@pytest.mark.unit
def test_processes_auto_is_the_usable_cpus() -> None:
    assert resolve_processes("auto") >= 1 and resolve_processes("3") == 3


@pytest.mark.unit
def test_combined_metrics_add_counters_and_keep_shared_gauges() -> None:
    one = CrawlMetrics(started_at=10.0, pages=5, in_flight=2, frontier_ready_domains=7)
    two = CrawlMetrics(started_at=20.0, pages=6, in_flight=1, frontier_ready_domains=9,
                       stopping=True)
    total = combine_metrics([one, two])
    assert (total.pages, total.in_flight, total.frontier_ready_domains) == (11, 3, 9)
    assert total.started_at == 10.0 and total.stopping


def fetched_records(data_dir: Path) -> list[dict[str, object]]:
    return [r for r in iter_records(data_dir / "sessions") if r["requests"]]


@pytest.mark.parametrize("per_host", [1, 8])
def test_two_processes_fetch_each_url_once_and_keep_every_host_delay(
        web: TestWeb, tmp_path: Path, redis_url: str, crawl_name: str, per_host: int) -> None:
    settings = crawler_settings(tmp_path / "data", redis_url, crawl_name, web.port,
                                per_host_concurrency=per_host)
    web.log.clear()
    supervisor = CrawlerSupervisor(settings, 2, seeds=SEEDS)
    report = asyncio.run(supervisor.run())
    requests = web.log.records()

    assert report.stop.run_reason == NOTHING_LEFT_TO_FETCH and report.pages > 300
    assert set(report.stop.hosts_json()) <= {"host unreachable"}  # only dead hosts left URLs
    assert len(supervisor.session_ids) == 2 and report.segments >= 2
    children = supervisor.child_reports
    assert all(r is not None and r.pages > 20 for r in children)  # both did real work
    counts = Counter((r.host, r.path_qs) for r in requests if r.host in ALIVE)
    assert max(counts.values()) == 1
    if per_host == 1:
        times, slack = server_arrivals(requests, ALIVE), _CLOCK_SLACK_S
    else:  # see request_times.crawler_starts
        times = crawler_starts(tmp_path / "data", ALIVE)
        slack = _CLOCK_SLACK_S + RECORD_ROUNDING_S
    for host, starts in times.items():
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        assert not gaps or min(gaps) >= expected_delay(host) - slack, (host, min(gaps))
    # Each process wrote its own session; together they hold one record per page.
    sessions = {p.name for p in (tmp_path / "data" / "sessions").glob("*/*")}
    assert sessions == set(supervisor.session_ids)
    assert len(fetched_records(tmp_path / "data")) == report.pages


def test_sigterm_drains_every_process_and_the_next_run_resumes(
        web: TestWeb, tmp_path: Path, redis_url: str, crawl_name: str) -> None:
    web.log.clear()
    data = tmp_path / "data"
    args = crawl_args(data, redis_url, crawl_name, web.port, "--processes", "2")
    process, port = start(args)
    wait_for_pages(process, port, 40)
    process.send_signal(signal.SIGTERM)
    code, first, err = finish(process)
    assert code == 0, err[-3000:]
    assert first["stopped"] == "SIGTERM" and first["processes"] == 2
    assert err.count("stopping (SIGTERM)") == 3  # the supervisor and both children
    pages = int(str(first["pages"]))
    assert 40 <= pages == len(fetched_records(data))  # every page's record was flushed
    assert not list(data.glob("*/.journals/*"))  # no journal or lock left behind

    process, port = start([*args, "--exit-when-idle", "0.5"])
    code, second, err = finish(process)
    assert code == 0 and second["stopped"] == "frontier exhausted", err[-3000:]
    counts = Counter((r.host, r.path_qs) for r in web.log.records())
    assert max(counts.values()) == 1  # nothing fetched twice across the two runs
    urls = Counter(r["page_url"] for r in fetched_records(data))
    assert max(urls.values()) == 1 and sum(urls.values()) == pages + int(str(second["pages"]))


def child_pids(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def test_a_killed_process_is_replaced_and_loses_no_url(
        web: TestWeb, tmp_path: Path, redis_url: str, crawl_name: str) -> None:
    web.log.clear()
    data = tmp_path / "data"
    # Leases of two minutes: the crawl only finishes in time if the supervisor ends the
    # dead process's leases itself.
    args = crawl_args(data, redis_url, crawl_name, web.port, "--processes", "2",
                      "--lease-seconds", "120", "--exit-when-idle", "1.5")
    process, port = start(args)
    wait_for_pages(process, port, 30)
    deadline = time.monotonic() + 10
    while len(children := child_pids(process.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(max(children), signal.SIGKILL)
    code, summary, err = finish(process, timeout=60)
    assert code == 0 and summary["stopped"] == "frontier exhausted", err[-3000:]
    assert "died (exit code -9)" in err and "starting a new crawler-" in err
    counts = Counter((r.host, r.path_qs) for r in web.log.records())
    assert sum(n - 1 for n in counts.values()) <= 8  # at most the dead one's fetches in flight

    queued = visited_queue(data, redis_url, crawl_name)
    # Every consumed URL has its page record: the dead process's came back from its journal.
    assert {str(r["page_url"]) for r in iter_records(data / "sessions")} == set(queued)
