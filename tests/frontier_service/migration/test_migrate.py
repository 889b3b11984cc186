"""migrate-from-postgres on a real PostgreSQL: what lands in the files and in Redis, the
dry run, and the errors."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg2
import pytest
import redis

from archive_testkit.pg_frontier import PgFrontier, libpq
from archive_testkit.servers import create_database, drop_database
from frontier_service.fetch.redis_robots_store import RedisRobotsStore
from frontier_service.frontier.frontier import Frontier, FrontierConfig
from frontier_service.migration.migrate_tables import EXCLUDED_REASON
from tests.frontier_service.migration.migrate_runs import (
    expected_from,
    lines_in_files,
    migrate,
    run,
)


def in_process(dsn: str, data: Path, redis_url: str, crawl: str, *extra: str,
               capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The command run in this process (no start-up to wait for): (exit code, out, err)."""
    from frontier_service.cli import main

    capsys.readouterr()
    code = main(["--data-dir", str(data), "--redis-url", redis_url, "--crawl-name", crawl,
                 "migrate-from-postgres", dsn, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_migration_queues_every_unvisited_row_once_and_carries_the_rest(pg_dsn: str, pg_data: PgFrontier,
                                                   tmp_path: Path, redis_url: str,
                                                   crawl_name: str) -> None:
    data = tmp_path / "data"
    done = migrate(pg_dsn, data, redis_url, crawl_name, "--batch-rows", "3000", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert "frontier:" in done.stderr and "rows/s" in done.stderr  # the progress line

    expected = expected_from(pg_data)
    counts, where, corrupt = lines_in_files(data)
    assert corrupt == 0
    assert [url for url, n in counts.items() if n > 1] == []
    assert set(counts) == set(expected.queued)
    assert all(where[url] == domain for url, domain in expected.queued.items())
    assert not set(counts) & expected.visited
    assert "http://site0004.example/redirected-here" not in counts  # a redirect's target
    assert summary["counts"]["frontier_queued"] == len(expected.queued)
    assert summary["counts"]["frontier_invalid"] == 2
    assert summary["rows"]["frontier"] == len(pg_data.frontier)  # rows read, twins included
    check_redis(data, pg_data, redis_url, crawl_name)

    again = migrate(pg_dsn, data, redis_url, crawl_name)  # finished: changes nothing
    assert again.returncode == 0, again.stderr[-2000:]
    assert "`frontier-service run` continues the crawl" in again.stdout
    assert lines_in_files(data)[0] == counts


def check_redis(data: Path, pg_data: PgFrontier, redis_url: str, crawl_name: str) -> None:
    """Visited records, exclusions, next fetch times, robots.txt and the epoch in Redis."""
    expected = expected_from(pg_data)
    async def check() -> None:
        from redis.asyncio import Redis

        client = Redis.from_url(redis_url)
        frontier = await Frontier(client, data, FrontierConfig(name=crawl_name)).open()
        try:
            visits = await frontier.visited.get_many([row[0] for row in pg_data.visited])
            assert all(v is not None and v.status == 200 for v in visits)
            keys = frontier.state.keys
            ready = {k.decode(): s for k, s in await client.zrange(keys.ready, 0, -1,
                                                                    withscores=True)}
            assert expected.excluded and not expected.excluded & set(ready)
            for domain in expected.excluded:
                info = await frontier.meta.info(domain)
                assert info.excluded and info.excluded_reason == EXCLUDED_REASON
            scheduled = {row[0]: row[4] for row in pg_data.domains if row[4] is not None}
            for domain, score in ready.items():
                if domain in scheduled:
                    assert score == pytest.approx(scheduled[domain] + 1.0)  # + min delay
            assert set(ready) == set(expected.queued.values()) - expected.excluded
            robots = RedisRobotsStore(client, crawl_name)
            with_robots = [row for row in pg_data.domains[::3]]
            for row in with_robots[:50]:
                for scheme in ("http", "https"):
                    entry = await robots.get(f"{scheme}://{row[0]}")
                    assert entry is not None and entry.body == row[1].encode()
            expired, without = pg_data.domains[1], pg_data.domains[2]
            assert expired[1] is not None and without[1] is None
            for row in (expired, without):
                assert await robots.get(f"http://{row[0]}") is None
            assert await client.exists(keys.epoch)
        finally:
            frontier.close()
            await client.aclose()

    run(check())


def test_dry_run_counts_and_writes_nothing(pg_dsn: str, pg_data: PgFrontier, tmp_path: Path,
                                           redis_url: str, crawl_name: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    code, out, err = in_process(pg_dsn, data, redis_url, crawl_name, "--dry-run", "--json",
                                capsys=capsys)
    assert code == 0, err[-3000:]
    report = json.loads(out.strip().splitlines()[-1])
    frontier, visited = report["frontier"], report["visited_urls"]
    assert frontier["rows"] == len(pg_data.frontier)
    assert frontier["invalid"] == 2
    assert frontier["distinct_domains"] == 1000
    visited_urls = {row[0] for row in pg_data.visited}
    assert frontier["already_visited"] == sum(row[0] in visited_urls for row in pg_data.frontier)
    assert visited["rows"] == len(pg_data.visited) and visited["invalid"] == 0
    assert report["domain_metadata"]["excluded"] == 40
    assert not data.exists()
    client = redis.Redis.from_url(redis_url)
    try:
        assert list(client.scan_iter(match=f"{crawl_name}:*")) == []
    finally:
        client.close()


def test_unreachable_server_and_bad_dsn_fail_clearly(tmp_path: Path, redis_url: str,
                                                      crawl_name: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    code, _, err = in_process("postgresql://postgres@127.0.0.1:1/frontier", data, redis_url,
                              crawl_name, capsys=capsys)
    assert code == 2
    assert "cannot connect to PostgreSQL at 127.0.0.1:1/frontier" in err
    code, _, err = in_process("postgresql://host:notaport/db", data, redis_url, crawl_name,
                              capsys=capsys)
    assert code == 2 and "error:" in err and "Traceback" not in err
    code, _, err = in_process("dbname='unclosed", data, redis_url, crawl_name, capsys=capsys)
    assert code == 2 and "bad PostgreSQL DSN" in err
    assert not data.exists()


def test_missing_tables_and_columns_are_named(postgres_server_url: str, tmp_path: Path,
                                              redis_url: str, crawl_name: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    url = create_database(postgres_server_url)
    name = url.rsplit("/", 1)[1]
    try:
        conn = psycopg2.connect(libpq(url))
        with conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE frontier (url TEXT, domain TEXT, depth INT)")
            cur.execute("CREATE TABLE domain_metadata (domain TEXT, robots_txt_content TEXT, "
                        "robots_txt_expires_timestamp BIGINT, is_manually_excluded BOOLEAN, "
                        "last_scheduled_fetch_timestamp BIGINT)")
        conn.close()
        code, _, err = in_process(libpq(url), tmp_path / "data", redis_url, crawl_name,
                                  capsys=capsys)
        assert code == 2
        assert "no table visited_urls" in err
        assert "table frontier has no column added_timestamp" in err
        assert "Traceback" not in err
        assert not (tmp_path / "data").exists()
    finally:
        drop_database(postgres_server_url, name)


def test_refuses_a_crawl_that_already_has_a_frontier(pg_dsn: str, tmp_path: Path,
                                                     redis_url: str, crawl_name: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        client.set(f"{crawl_name}:epoch", "someone-else")
    finally:
        client.close()
    code, _, err = in_process(pg_dsn, tmp_path / "data", redis_url, crawl_name, capsys=capsys)
    assert code == 2
    assert "already has a frontier" in err and "new --crawl-name" in err
