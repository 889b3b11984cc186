"""Progress lines: a busy crawl's rate; an idle one says so, and what it waits for, a
line a minute instead of "0.0 pages/s" every few seconds."""

from __future__ import annotations

import pytest

from frontier_service.metrics import CrawlMetrics
from frontier_service.service.progress_line import IdleLines, format_idle, format_progress

pytestmark = pytest.mark.unit  # pure: no server, no process


def test_an_idle_crawl_says_so_once_a_minute() -> None:
    metrics = CrawlMetrics(pages=157)
    lines = IdleLines(metrics, now=0.0)
    kinds = [lines.next_line(float(t)) for t in range(5, 200, 5)]
    assert kinds[0] == "progress"  # one line with the final rate
    assert kinds.count("idle") == 4 and kinds.count("progress") == 1  # at 10, 70, 130, 190 s
    assert lines.idle_line(130.0).startswith("idle for 2m10s (no page archived): nothing queued")
    metrics.pages += 1
    assert lines.next_line(200.0) == "progress"  # busy again


def test_the_idle_line_names_what_the_crawl_waits_for() -> None:
    waiting = CrawlMetrics(frontier_ready_domains=3)
    line = format_idle(waiting, idle_s=65, next_due_s=12.4)
    assert "idle for 1m05s" in line
    assert "3 domains waiting on politeness delays or back-off, the next due in 12 s" in line
    stopped = CrawlMetrics(frontier_pending_bytes=1_558)
    line = format_idle(stopped, idle_s=5, exit_when_idle_s=10)
    assert "nothing queued; 1.6 KB of URLs left only on stopped hosts" in line
    assert line.split(" | ")[0].endswith("exits after 10 s idle")
    assert "waiting for new URLs" in format_idle(CrawlMetrics(), idle_s=5)
    assert "2 domains leased" in format_idle(CrawlMetrics(frontier_leased_domains=2), idle_s=5)


def test_the_progress_line_counts_browser_pages_only_when_there_are_some() -> None:
    assert "browser" not in format_progress(CrawlMetrics(pages=5), 1.0)
    line = format_progress(CrawlMetrics(pages=5, browser_pages=3, browser_failures=1,
                                        browser_restarts=2), 1.0)
    assert line.endswith("| browser 3 pages, 1 failed, 2 restarts")
