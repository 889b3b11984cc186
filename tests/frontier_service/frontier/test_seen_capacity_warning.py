"""A crawl whose seen filter fills up warns in its log and exposes the fill in its metrics, with
the capacity the filter in Redis has (a later process configured otherwise adopts it)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from frontier_service.metrics import CrawlMetrics, render_prometheus
from frontier_service.service.progress_line import ProgressReporter
from tests.frontier_service.frontier.helpers import open_frontier


def test_a_filling_seen_filter_is_reported(redis_url: str, tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    asyncio.run(_filling(redis_url, tmp_path, caplog))


async def _filling(redis_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with open_frontier(redis_url, tmp_path / "f", "seenfill", seen_capacity=1_000) as first:
        await first.add_urls([(f"https://a{i % 40}.test/p{i}", 0) for i in range(700)])
        metrics = CrawlMetrics()
        reporter = ProgressReporter(first, metrics)
        with caplog.at_level(logging.WARNING, logger="frontier_service.progress"):
            await reporter.sample()
            assert not caplog.records  # 70%: nothing to say yet
            await first.add_urls([(f"https://b{i % 40}.test/p{i}", 0) for i in range(150)])
            await reporter.sample()
            await reporter.sample()
        warnings = [r.getMessage() for r in caplog.records]
        assert len(warnings) == 1, warnings
        assert warnings[0].startswith("seen filter: 850 URLs added, 85% of its capacity 1,000")
        assert metrics.seen_filter_urls == 850 and metrics.seen_filter_capacity == 1_000
        assert "frontier_seen_filter_capacity 1000" in render_prometheus(metrics)

    # A process configured with a bigger capacity adopts the filter in Redis, and says so.
    caplog.clear()
    async with open_frontier(redis_url, tmp_path / "f", "seenfill",
                             seen_capacity=1_000_000) as second:
        metrics = CrawlMetrics()
        with caplog.at_level(logging.WARNING, logger="frontier_service.progress"):
            await ProgressReporter(second, metrics).sample()
        assert metrics.seen_filter_capacity == 1_000
        assert any("85% of its capacity 1,000 " in r.getMessage() for r in caplog.records)
