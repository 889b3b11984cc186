"""migrate-from-postgres killed (SIGKILL) at random points and run again until it finishes:
every frontier row in the files exactly once."""

from __future__ import annotations

import json
import random
import signal
import time
from pathlib import Path

from archive_testkit.pg_frontier import PgFrontier
from frontier_service.migration import migrate_checkpoint as mcp
from tests.frontier_service.migration.migrate_runs import (
    expected_from,
    lines_in_files,
    migrate,
    run,
    start_migration,
)

KILLS = 10


def test_killed_at_random_points_every_row_lands_once(pg_dsn: str, pg_data: PgFrontier,
                                                      tmp_path: Path, redis_url: str,
                                                      crawl_name: str) -> None:
    data = tmp_path / "data"
    rng = random.Random(3434)
    checkpoint = mcp.checkpoint_path(data, crawl_name)
    kills = mid_batch = wide = 0
    progress: list[tuple[int, str | None]] = []
    for _ in range(60):
        if kills >= KILLS:
            break
        before = _mtime(checkpoint)
        process = start_migration(pg_dsn, data, redis_url, crawl_name, "--batch-rows", "500")
        # once it is past its start-up (it wrote the checkpoint), within a few batches
        deadline = time.monotonic() + 60
        while _mtime(checkpoint) == before and process.poll() is None:
            assert time.monotonic() < deadline, "the migration wrote no checkpoint in 60 s"
            time.sleep(0.01)
        # (the pipelined migration takes ~50,000 rows in well under a second once started)
        time.sleep(rng.uniform(0.0, 0.12))
        if process.poll() is not None:
            state = mcp.load(checkpoint)
            if state is None or state.finished:
                break  # too late to kill (or it failed: the final run below says so)
            continue
        process.send_signal(signal.SIGKILL)
        process.wait()
        kills += 1
        state = mcp.load(checkpoint)
        if state is not None:
            mid_batch += state.pending is not None
            wide += state.pending is not None and _rows_in(pg_dsn, state.pending) > 1500
            # where it fell: the rows synced, and how far the window not synced reached
            progress.append((state.table("frontier").rows,
                             state.pending.through if state.pending else None))
    assert kills >= KILLS, f"only {kills} kills landed before the migration finished"
    done = migrate(pg_dsn, data, redis_url, crawl_name, "--batch-rows", "500", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])

    # the kills fell at many points, some inside a frontier batch (the hard case)
    assert len(set(progress)) >= 4, progress
    assert mid_batch >= 1, progress
    assert wide >= 1, progress  # ... in a window of several batches, not yet synced
    expected = expected_from(pg_data)
    counts, where, corrupt = lines_in_files(data)
    assert corrupt == 0
    assert [url for url, n in counts.items() if n > 1] == []
    assert set(counts) == set(expected.queued)
    assert all(where[url] == domain for url, domain in expected.queued.items())
    assert summary["rows"]["frontier"] == len(pg_data.frontier)


def _rows_in(dsn: str, pending: mcp.PendingBatch) -> int:
    """The frontier rows a pending record spans (in PostgreSQL's order of the URLs)."""
    import psycopg2

    conn = psycopg2.connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM frontier WHERE url > coalesce(%s, '') "
                        "AND url <= %s", (pending.after, pending.through))
            return int(cur.fetchone()[0])
    finally:
        conn.close()


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def test_redis_lost_mid_migration_migrates_the_visited_urls_again(
        pg_dsn: str, pg_data: PgFrontier, tmp_path: Path, redis_url: str,
        crawl_name: str) -> None:
    import redis

    data = tmp_path / "data"
    checkpoint = mcp.checkpoint_path(data, crawl_name)
    process = start_migration(pg_dsn, data, redis_url, crawl_name, "--batch-rows", "1500")
    deadline = time.monotonic() + 90
    while process.poll() is None:
        state = mcp.load(checkpoint) if checkpoint.exists() else None
        if state is not None and state.table("frontier").rows > 0:
            break
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    client = redis.Redis.from_url(redis_url)
    try:  # Redis loses the crawl (a restart without persistence)
        for key in client.scan_iter(match=f"{crawl_name}:*", count=1000):
            client.unlink(key)
    finally:
        client.close()
    done = migrate(pg_dsn, data, redis_url, crawl_name, "--batch-rows", "1500")
    assert done.returncode == 0, done.stderr[-3000:]
    expected = expected_from(pg_data)
    counts, _, corrupt = lines_in_files(data)
    assert corrupt == 0 and max(counts.values()) == 1
    assert set(counts) == set(expected.queued)
    run(_visited_all_seen(pg_data, redis_url, crawl_name, data))


async def _visited_all_seen(pg_data: PgFrontier, redis_url: str, crawl_name: str,
                            data: Path) -> None:
    from redis.asyncio import Redis

    from archive_pipelines.canonical_urls import canonical_url_and_domain
    from frontier_service.frontier.frontier import Frontier, FrontierConfig

    client = Redis.from_url(redis_url)
    frontier = await Frontier(client, data, FrontierConfig(name=crawl_name)).open()
    try:
        urls = [row[0] for row in pg_data.visited]
        seen = await frontier.seen.contains_many([canonical_url_and_domain(u)[2] for u in urls])
        assert all(seen)
        assert all(v is not None for v in await frontier.visited.get_many(urls))
    finally:
        frontier.close()
        await client.aclose()
