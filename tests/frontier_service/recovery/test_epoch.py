"""The crawl id on disk and the epoch key in Redis: match, empty, missing, foreign."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from archive_pipelines.archive_error import DataDirError
from frontier_service.frontier.checkpoint import OffsetCheckpoint, checkpoint_dir
from frontier_service.frontier.keys import FrontierKeys
from frontier_service.recovery.epoch import (
    EpochState,
    check_epoch,
    crawl_id_path,
    ensure_crawl_id,
    has_disk_state,
    read_crawl_id,
    set_epoch,
)
from tests.frontier_service.frontier.helpers import open_frontier


@pytest.mark.unit
def test_the_crawl_id_is_made_once_and_kept(tmp_path: Path) -> None:
    assert read_crawl_id(tmp_path, "c") is None
    first = ensure_crawl_id(tmp_path, "c")
    assert ensure_crawl_id(tmp_path, "c") == first == read_crawl_id(tmp_path, "c")
    assert crawl_id_path(tmp_path, "c") == checkpoint_dir(tmp_path, "c") / "crawl-id"
    assert ensure_crawl_id(tmp_path, "other") != first
    assert [p.name for p in checkpoint_dir(tmp_path, "c").iterdir()] == ["crawl-id"]


@pytest.mark.unit
def test_racing_processes_agree_on_one_crawl_id(tmp_path: Path) -> None:
    ids: list[str] = []
    threads = [threading.Thread(target=lambda: ids.append(ensure_crawl_id(tmp_path, "c")))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(ids) == 8 and len(set(ids)) == 1


@pytest.mark.unit
def test_a_damaged_crawl_id_is_a_clear_error(tmp_path: Path) -> None:
    path = crawl_id_path(tmp_path, "c")
    path.parent.mkdir(parents=True)
    path.write_text("garbage")
    with pytest.raises(DataDirError, match="does not hold a crawl id"):
        ensure_crawl_id(tmp_path, "c")


def test_epoch_states(redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        keys = FrontierKeys(crawl_name)
        crawl_id = ensure_crawl_id(tmp_path, crawl_name)
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            redis = frontier.redis
            # Frontier.open made the seen and visited keys: still no state of the crawl.
            assert await check_epoch(redis, keys, crawl_id) is EpochState.EMPTY
            await frontier.add_urls([("https://a.example/", 0)])
            assert await check_epoch(redis, keys, crawl_id) is EpochState.MISSING
            await set_epoch(redis, keys, crawl_id)
            assert await check_epoch(redis, keys, crawl_id) is EpochState.MATCH
            assert await check_epoch(redis, keys, "another-id") is EpochState.FOREIGN
            await redis.delete(keys.epoch, keys.counters, keys.ready)
            # Only a domain hash is left (evicted keys): found by the scan.
            assert await check_epoch(redis, keys, crawl_id) is EpochState.MISSING
            await redis.delete(keys.domain("a.example"))
            assert await check_epoch(redis, keys, crawl_id) is EpochState.EMPTY

    asyncio.run(main())


def test_a_crawl_name_with_glob_characters_only_sees_its_own_keys(redis_url: str,
                                                                 crawl_name: str) -> None:
    async def main() -> None:
        async with open_frontier(redis_url, Path("/nonexistent"), crawl_name) as frontier:
            redis = frontier.redis
            await redis.hset(f"{crawl_name}x:domain:a.example", "size", 1)
            try:
                starred = FrontierKeys(f"{crawl_name}*")
                assert await check_epoch(redis, starred, "id") is EpochState.EMPTY
            finally:
                await redis.delete(f"{crawl_name}x:domain:a.example")

    asyncio.run(main())


@pytest.mark.unit
def test_disk_state_is_a_frontier_file_or_a_checkpoint(tmp_path: Path) -> None:
    assert not has_disk_state(tmp_path, "c")
    ensure_crawl_id(tmp_path, "c")
    (tmp_path / "frontiers" / ".journals").mkdir()
    assert not has_disk_state(tmp_path, "c")  # an id and journals are not a frontier
    checkpoint = OffsetCheckpoint(checkpoint_dir(tmp_path, "c"), "s1")
    checkpoint.advance("a.example", 10)
    checkpoint.close()
    assert has_disk_state(tmp_path, "c")
    assert not has_disk_state(tmp_path, "other")
    shard = tmp_path / "frontiers" / "3f"
    shard.mkdir()
    (shard / "a.example.frontier").write_bytes(b"\nhttps://a.example/|0|1|1\n")
    assert has_disk_state(tmp_path, "other")
