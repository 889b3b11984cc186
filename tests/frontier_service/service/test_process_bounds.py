"""Descriptors and memory per crawler process: the settings that bound them, the startup
check against RLIMIT_NOFILE, the frontier-file cap through the crawler's config, the gauges."""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.archive_error import SettingsError
from archive_pipelines.settings import load_settings
from frontier_service.frontier.frontier import Frontier
from frontier_service.metrics import CrawlMetrics, render_prometheus
from frontier_service.service.crawler_parts import fetch_settings, frontier_config
from frontier_service.service.crawler_settings import CrawlerSettings, from_settings
from frontier_service.service.descriptor_limit import descriptors_needed, ensure_descriptor_limit
from frontier_service.service.process_gauges import open_fds, rss_bytes, sample_process
from tests.frontier_service.frontier.helpers import connect


def settings(tmp_path: Path, **changes: object) -> CrawlerSettings:
    return CrawlerSettings(data_dir=tmp_path).with_changes(**changes)


@pytest.mark.unit
@pytest.mark.parametrize(("change", "message"), [
    ({"max_open_files": 0}, "`max_open_files` must be at least 1"),
    ({"max_idle_connections": -1}, "`max_idle_connections` must not be negative"),
])
def test_bad_bounds_are_refused(tmp_path: Path, change: dict[str, int], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        settings(tmp_path, **change)


@pytest.mark.unit
def test_the_bounds_reach_the_frontier_and_the_fetcher(tmp_path: Path) -> None:
    s = settings(tmp_path, max_open_files=77, max_idle_connections=33)
    assert frontier_config(s).max_open_files == 77
    assert fetch_settings(s).max_idle_connections == 33


@pytest.fixture
def rlimit() -> Iterator[tuple[int, int]]:
    """The descriptor limits, restored after the test (which may lower the soft one)."""
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield limits
    resource.setrlimit(resource.RLIMIT_NOFILE, limits)


@pytest.mark.unit
def test_a_low_soft_limit_is_raised_to_what_the_settings_need(
        tmp_path: Path, rlimit: tuple[int, int]) -> None:
    s = settings(tmp_path, max_open_files=500, max_idle_connections=100, concurrency=10)
    needed = descriptors_needed(s)
    assert needed == 500 + 20 + 100 + 256
    if rlimit[1] != resource.RLIM_INFINITY and rlimit[1] < needed:
        pytest.skip(f"hard descriptor limit {rlimit[1]} below {needed}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed - 100, rlimit[1]))
    assert ensure_descriptor_limit(s) == needed
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == needed


@pytest.mark.unit
def test_settings_beyond_the_hard_limit_are_refused(tmp_path: Path,
                                                    rlimit: tuple[int, int]) -> None:
    soft, hard = rlimit
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard descriptor limit")
    s = settings(tmp_path, max_open_files=hard, max_idle_connections=0)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 1024), hard))
    with pytest.raises(SettingsError, match="lower --max-open-files"):
        ensure_descriptor_limit(s)


async def fill_domains(redis_url: str, root: Path, *, cap: int, domains: int) -> tuple[int, int]:
    """(most descriptors open at once above the start, frontier files written): URLs for
    `domains` domains added and read back through a Frontier built the crawler's way."""
    config = frontier_config(settings(root, max_open_files=cap, seen_capacity=100_000,
                                      visited_expected=1_000, crawl_name=f"bounds{cap}"))
    async with connect(redis_url) as client:
        frontier = await Frontier(client, root, config).open()
        try:
            base, peak = open_fds(), 0
            for start in range(0, domains, 50):
                urls = [(f"http://d{n}.test/p{i}", 0) for n in range(start, start + 50)
                        for i in range(3)]
                await frontier.add_urls(urls)
                for n in range(start, start + 50):
                    frontier.files.read_from(f"d{n}.test", 0, 10)
                peak = max(peak, open_fds() - base)
            written = sum(1 for _ in (root / "frontiers").rglob("*.frontier"))
            return peak, written
        finally:
            frontier.close()


def test_frontier_files_open_stay_under_the_cap(redis_url: str, tmp_path: Path) -> None:
    peak, written = asyncio.run(fill_domains(redis_url, tmp_path / "small", cap=16, domains=400))
    assert written == 400
    assert peak <= 16
    # The counterpart: with room for every file, the count measured does grow with the domains.
    peak, written = asyncio.run(fill_domains(redis_url, tmp_path / "large", cap=1000, domains=400))
    assert written == 400 and peak >= 390


@pytest.mark.unit
def test_the_gauges_read_this_process(tmp_path: Path) -> None:
    before = open_fds()
    with open(tmp_path / "a", "wb"), open(tmp_path / "b", "wb"):
        assert open_fds() == before + 2
    assert open_fds(-1) == 0 and rss_bytes(-1) == 0  # no such process: 0, not an error
    m = CrawlMetrics()
    sample_process(m)
    assert m.open_fds > 0 and 10_000_000 < m.rss_bytes < 10_000_000_000
    text = render_prometheus(m)
    assert f"frontier_open_fds {m.open_fds}\n" in text
    assert f"frontier_rss_bytes {m.rss_bytes}\n" in text


@pytest.mark.unit
def test_the_bounds_come_from_archive_toml(data_dir: Path) -> None:
    (data_dir / "archive.toml").write_text("[crawl]\nmax_open_files = 300\nmax_idle_connections = 0\n")
    crawler = from_settings(load_settings(data_dir, environ={}))
    assert (crawler.max_open_files, crawler.max_idle_connections) == (300, 0)
    assert from_settings(load_settings(data_dir, environ={}), max_open_files=20).max_open_files == 20
