"""The crawl a migration leaves: `frontier-service run` on the same data dir, Redis and crawl
name continues it (no --seed) and fetches each unvisited URL once and no visited one."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.canonical_urls import canonicalize
from archive_testkit.pg_frontier import PgFrontier, load, visited_row
from archive_testkit.servers import create_database, drop_database
from archive_testkit.testweb import RobotsKind, TestWeb, hosts_where, page_path, serve_in_background
from tests.frontier_service.migration.migrate_runs import migrate
from tests.frontier_service.service.cli_runs import cli
from tests.frontier_service.service.web import WEB

SITE = WEB.with_changes(hosts=60, special_fraction=0.0, crawl_delay_fraction=0.0)
HOSTS = hosts_where(SITE, lambda t: t.alive and not t.traps
                    and t.robots in (RobotsKind.STANDARD, RobotsKind.NONE))[:21]
EXCLUDED = HOSTS[20]
WITH_ROBOTS = HOSTS[:5]  # their robots.txt comes from the migration, not the web


def old_frontier() -> PgFrontier:
    """15 pages of each host queued (300 over 20 hosts, 15 more on an excluded one), every
    fourth of them already visited, and pages 15-17 visited but not queued (links to them
    must not be followed)."""
    now = int(time.time())
    data = PgFrontier()
    for host in HOSTS:
        for i in range(15):
            data.frontier.append((f"http://{host}{page_path(i)}", host, 0, now - 100))
            if i % 4 == 3:
                data.visited.append(visited_row(f"http://{host}{page_path(i)}", at=now - 50))
        for i in (15, 16, 17):
            data.visited.append(visited_row(f"http://{host}{page_path(i)}", at=now - 50))
        robots = "User-agent: *\nAllow: /\n" if host in WITH_ROBOTS else None
        data.domains.append((host, robots, now + 3600 if robots else None, host == EXCLUDED,
                             now - 30))
    return data


@pytest.fixture
def web() -> Iterator[TestWeb]:
    with serve_in_background(SITE) as running:
        yield running


@pytest.fixture
def small_dsn(postgres_server_url: str) -> Iterator[str]:
    name = f"mig_{uuid.uuid4().hex[:10]}"
    url = create_database(postgres_server_url, name)
    load(url, old_frontier())
    try:
        yield url.replace("postgresql+psycopg2://", "postgresql://", 1)
    finally:
        drop_database(postgres_server_url, name)


def test_run_continues_the_migrated_frontier(small_dsn: str, web: TestWeb, tmp_path: Path,
                                             redis_url: str, crawl_name: str) -> None:
    data = tmp_path / "data"
    done = migrate(small_dsn, data, redis_url, crawl_name)
    assert done.returncode == 0, done.stderr[-3000:]
    web.log.clear()
    args = ["--data-dir", str(data), "--redis-url", redis_url, "--crawl-name", crawl_name, "run",
            "--host-map", f"*.test=127.0.0.1:{web.port}", "--allow-network", "127.0.0.0/8",
            "--max-depth", "1", "--min-delay", "0.02", "--concurrency", "32", "--no-assets",
            "--exit-when-idle", "1", "--max-seconds", "60", "--loop", "asyncio",
            "--progress-seconds", "0"]
    for host in HOSTS:
        args += ["--allowed-domain", host]
    crawl = cli(*args, timeout=120)
    assert crawl.returncode == 0, crawl.stderr[-3000:]

    old = old_frontier()
    visited = {canonicalize(row[0]) for row in old.visited}
    unvisited = {canonicalize(row[0]) for row in old.frontier if row[1] != EXCLUDED} - visited
    records = web.log.records()
    pages = Counter(canonicalize(f"http://{r.host}{r.path_qs}") for r in records
                    if r.path_qs != "/robots.txt")
    assert len(unvisited) == 300 - 20 * 3
    assert [url for url in unvisited if pages[url] != 1] == []
    assert [url for url, n in pages.items() if n > 1] == []
    assert not set(pages) & visited
    assert not [r for r in records if r.host == EXCLUDED]
    robots_fetched = {r.host for r in records if r.path_qs == "/robots.txt"}
    assert robots_fetched and not robots_fetched & set(WITH_ROBOTS)
    assert len(pages) > len(unvisited)  # it followed links too (and dropped the visited ones)
