"""`frontier-service rebuild-redis`: rebuilds a lost Redis from the data dir, refuses while
a crawler runs, and asks for --yes before replacing a whole Redis."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from frontier_service.archiving.session_lock import lock_session
from frontier_service.cli import main
from frontier_service.frontier.checkpoint import OffsetCheckpoint, checkpoint_dir
from frontier_service.frontier.keys import FrontierKeys
from frontier_service.recovery.epoch import EpochState, check_epoch, read_crawl_id
from tests.frontier_service.frontier.helpers import connect, open_frontier
from tests.helpers.crawls import delete_keys

URLS = [f"http://r{i}.example/{j}" for i in range(4) for j in range(3)]


def queue_and_fetch(redis_url: str, data_dir: Path, name: str) -> int:
    """Queue URLs, fetch r0's first one (checkpointed); returns r0's read offset."""
    async def run() -> int:
        async with open_frontier(redis_url, data_dir, name) as frontier:
            await frontier.add_urls([(url, 0) for url in URLS])
            [domain] = await frontier.claim("w", 1)
            batch = await frontier.next_urls(domain, 1)
            await frontier.done(domain, "w", 0, new_offset=batch.end_offset)
            checkpoint = OffsetCheckpoint(checkpoint_dir(data_dir, name), "s1")
            checkpoint.advance(domain, batch.end_offset, 1)
            checkpoint.close()
            return batch.end_offset

    return asyncio.run(run())


def rebuild(data_dir: Path, redis_url: str, name: str, *more: str) -> int:
    return main(["--data-dir", str(data_dir), "--redis-url", redis_url, "--crawl-name", name,
                 "rebuild-redis", *more])


def test_rebuild_redis_restores_a_wiped_crawl(tmp_path: Path, redis_url: str, crawl_name: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    offset = queue_and_fetch(redis_url, tmp_path, crawl_name)
    delete_keys(redis_url, crawl_name)
    assert rebuild(tmp_path, redis_url, crawl_name, "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["crawl"] == crawl_name and summary["redis_held"] == "empty"
    assert (summary["domains"], summary["ready"], summary["urls"], summary["seen_added"]) == (
        4, 4, 12, 12)

    async def check() -> None:
        async with connect(redis_url) as client:
            crawl_id = read_crawl_id(tmp_path, crawl_name)
            assert crawl_id is not None
            keys = FrontierKeys(crawl_name)
            assert await check_epoch(client, keys, crawl_id) is EpochState.MATCH
            offsets = [int(await client.hget(keys.domain(f"r{i}.example"), "read_offset") or 0)
                       for i in range(4)]
            assert sorted(offsets) == [0, 0, 0, offset]

    asyncio.run(check())

    # Redis now holds the crawl whole: replacing it takes --yes.
    assert rebuild(tmp_path, redis_url, crawl_name) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already holds crawl" in err[0] and "pass --yes" in err[0]
    assert rebuild(tmp_path, redis_url, crawl_name, "--yes") == 0
    out = capsys.readouterr().out
    assert "domains: 4 (4 ready" in out and "URLs: 12 queued" in out


def test_rebuild_redis_refuses_while_a_crawler_runs(tmp_path: Path, redis_url: str,
                                                   crawl_name: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    queue_and_fetch(redis_url, tmp_path, crawl_name)
    for directory in (checkpoint_dir(tmp_path, crawl_name), tmp_path / "sessions" / ".journals"):
        lock = lock_session(directory, "live-session")
        try:
            assert rebuild(tmp_path, redis_url, crawl_name) == 2
            err = capsys.readouterr().err
            assert "a crawler is running" in err and "stop the crawl first" in err
        finally:
            lock.close()
    assert rebuild(tmp_path, redis_url, crawl_name, "--yes") == 0


def test_rebuild_redis_with_nothing_on_disk_is_one_clear_line(
        tmp_path: Path, redis_url: str, crawl_name: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert rebuild(tmp_path, redis_url, crawl_name) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"frontier-service: error: data dir {tmp_path} holds no frontier files or checkpoints "
        f"of crawl {crawl_name!r}: nothing to rebuild Redis from"]


@pytest.mark.unit
def test_rebuild_redis_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rebuild-redis", "--help"]) == 0
    assert "Usage: frontier-service rebuild-redis" in capsys.readouterr().out


def test_stats_says_when_redis_lost_the_crawl(tmp_path: Path, redis_url: str, crawl_name: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    queue_and_fetch(redis_url, tmp_path, crawl_name)
    (tmp_path / "redis").mkdir()  # `stats` wants a crawl to have run in the data dir
    args = ["--data-dir", str(tmp_path), "--redis-url", redis_url, "--crawl-name", crawl_name,
            "stats", "--json"]
    delete_keys(redis_url, crawl_name)
    assert rebuild(tmp_path, redis_url, crawl_name) == 0  # gives the crawl its id and epoch
    capsys.readouterr()
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["redis_state"] == "Redis holds this crawl"
    delete_keys(redis_url, crawl_name)
    assert main(args) == 0
    assert "the next run rebuilds it" in json.loads(capsys.readouterr().out)["redis_state"]
