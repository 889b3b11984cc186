"""migrate-from-postgres killed (SIGKILL) at random points and run again until it finishes:
every frontier row in the files exactly once."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from collections.abc import Callable
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


def test_killed_at_random_points_every_row_lands_once(pg_dsn: str, pg_data: PgFrontier,
                                                      tmp_path: Path, redis_url: str,
                                                      crawl_name: str) -> None:
    """Each run is killed at a point chosen by how far it got, not by the clock (a slow or busy
    machine got no further than the first tables in a fixed time): some after a random number
    of rows, some inside a frontier batch, some inside a window of several batches not synced
    (the hard case)."""
    data = tmp_path / "data"
    rng = random.Random(3434)
    checkpoint = mcp.checkpoint_path(data, crawl_name)
    kills = mid_batch = wide = 0
    progress: list[tuple[tuple[int, ...], str | None]] = []
    plan = ["rows", "rows", "rows", "in-batch", "wide", "rows", "in-batch", "wide", "rows", "wide"]
    for point in plan:
        start = mcp.load(checkpoint)
        wanted = _reached(point, start=start, dsn=pg_dsn,
                          rows=_rows_done(start) + rng.choice((0, 250, 500, 1000, 2000)))
        process = start_migration(pg_dsn, data, redis_url, crawl_name, "--batch-rows", "500")
        # after a row count, a moment more: the kill then falls anywhere between two saves
        jitter = rng.uniform(0.0, 0.03) if point == "rows" else 0.0
        state = _kill_when(process, checkpoint, wanted, jitter_s=jitter)
        if state is None:
            break  # it finished first (or failed: the final run below says so)
        kills += 1
        mid_batch += state.pending is not None
        wide += state.pending is not None and _rows_in(pg_dsn, state.pending) > 1500
        # where it fell: the rows synced per table, and how far the window not synced reached
        progress.append(_point(state))
    assert kills == len(plan), f"only {kills} kills landed before the migration finished"
    done = migrate(pg_dsn, data, redis_url, crawl_name, "--batch-rows", "500", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])

    # the kills fell at many points, some inside a frontier batch (the hard case)
    assert len(set(progress)) >= 6, progress
    assert mid_batch >= 5, progress
    assert wide >= 3, progress  # ... in a window of several batches, not yet synced
    expected = expected_from(pg_data)
    counts, where, corrupt = lines_in_files(data)
    assert corrupt == 0
    assert [url for url, n in counts.items() if n > 1] == []
    assert set(counts) == set(expected.queued)
    assert all(where[url] == domain for url, domain in expected.queued.items())
    assert summary["rows"]["frontier"] == len(pg_data.frontier)


def _reached(point: str, *, start: mcp.MigrationCheckpoint | None, rows: int,
             dsn: str) -> Callable[[mcp.MigrationCheckpoint], bool]:
    """Whether a run's checkpoint shows `point`: more than `rows` rows done, or a pending
    batch (over 1,500 rows for "wide") this run reached, not the one the last run was killed
    in (a pending record stays in the checkpoint until the run after the kill syncs it)."""
    if point == "rows":
        return lambda state: _rows_done(state) > rows
    least = 1500 if point == "wide" else 0
    return lambda state: (state.pending is not None and _point(state) != _point(start)
                          and (not least or _rows_in(dsn, state.pending) > least))


def _kill_when(process: subprocess.Popen[str], checkpoint: Path,
               wanted: Callable[[mcp.MigrationCheckpoint], bool], *,
               jitter_s: float) -> mcp.MigrationCheckpoint | None:
    """SIGKILL the migration once its checkpoint on disk shows `wanted` (and `jitter_s` more);
    the checkpoint then. The process is stopped (SIGSTOP) while the checkpoint is read again,
    so the kill falls in a state that is still `wanted`, not a few batches on. None if it
    exited first."""
    deadline = time.monotonic() + 120
    while process.poll() is None:
        assert time.monotonic() < deadline, "the migration neither finished nor got there in 120 s"
        state = mcp.load(checkpoint)
        if state is not None and wanted(state):
            time.sleep(jitter_s)
            process.send_signal(signal.SIGSTOP)
            state = mcp.load(checkpoint)
            if process.poll() is None and state is not None and wanted(state):
                process.send_signal(signal.SIGKILL)
                process.wait()
                return state
            process.send_signal(signal.SIGCONT)
        time.sleep(0.005)
    return None


def _point(state: mcp.MigrationCheckpoint | None) -> tuple[tuple[int, ...], str | None]:
    """Where a migration is: the rows synced per table, and how far the window not synced
    reaches."""
    if state is None:
        return (), None
    return (tuple(t.rows for _, t in sorted(state.tables.items())),
            state.pending.through if state.pending else None)


def _rows_done(state: mcp.MigrationCheckpoint | None) -> int:
    return 0 if state is None else sum(t.rows for t in state.tables.values())


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
