"""Frontier file compaction: the consumed prefix of a file is freed on disk, every reader
still sees exactly the unread URLs, and a Redis rebuilt from disk afterwards loses none and
still knows every URL the crawl queued."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from archive_pipelines.canonical_urls import fingerprint_canonical
from frontier_service.frontier.checkpoint import (
    DomainCheckpoint,
    OffsetCheckpoint,
    checkpoint_dir,
    load_checkpoints,
)
from frontier_service.frontier.compaction import (
    FrontierCompactor,
    compact_crawl,
    disk_usage,
    in_part,
    line_cut,
    read_seen,
)
from frontier_service.frontier.frontier_files import FrontierFiles
from frontier_service.frontier.frontier_record import FrontierRecord
from frontier_service.recovery.disk_frontier import complete_end, scan_file
from frontier_service.recovery.epoch import ensure_crawl_id, set_epoch
from frontier_service.recovery.redis_rebuild import rebuild_redis
from tests.frontier_service.frontier.helpers import open_frontier

NOW = 1_800_000_000.0
DOMAIN = "a.example"


def urls_of(domain: str, n: int) -> list[str]:
    return [f"http://{domain}/some/longer/path/to/page{i}?query={i}&with=a" for i in range(n)]


def fill(files: FrontierFiles, domain: str, urls: list[str]) -> None:
    for i in range(0, len(urls), 100):  # many appends, as a crawl makes them
        files.append(domain, [FrontierRecord(u, 1, 1.0, 1) for u in urls[i:i + 100]])


def blocks(path: Path) -> int:
    return os.stat(path).st_blocks


@pytest.mark.unit
def test_punch_frees_the_prefix_and_readers_see_exactly_the_unread_urls(tmp_path: Path) -> None:
    files = FrontierFiles(tmp_path)
    urls = urls_of(DOMAIN, 4000)  # ~300 KB
    fill(files, DOMAIN, urls)
    consumed, offset = files.read_from(DOMAIN, 0, 3000)
    assert [r.url for r in consumed] == urls[:3000]
    path = files.path_for(DOMAIN)
    before, size = blocks(path), path.stat().st_size

    report = FrontierCompactor(files, threshold=64 << 10).compact({DOMAIN: DomainCheckpoint(offset)})

    assert report.files == 1 and report.errors == 0 and report.unsupported == 0
    assert path.stat().st_size == size  # offsets stay valid
    assert blocks(path) < before * 0.35 and report.bytes_freed == (before - blocks(path)) * 512
    unread = urls[3000:]
    assert [r.url for r in files.read_from(DOMAIN, offset, 10_000)[0]] == unread
    # Readers from an older offset skip the hole: no URL twice, none corrupt.
    assert [r.url for r in files.read_from(DOMAIN, 0, 10_000)[0]] == unread
    assert [r.url for r in files.read_from(DOMAIN, offset // 2, 10_000)[0]] == unread
    assert files.corrupt_lines == 0
    scan = scan_file(path)
    assert scan.torn_lines == 0 and scan.end == size and complete_end(path) == size
    # The punched lines left their fingerprints; the rebuild's scan gives every URL once.
    assert read_seen(path) == [fingerprint_canonical(u) for u in urls[:3000]]
    assert sorted(scan.fingerprints) == sorted(fingerprint_canonical(u) for u in urls)

    # The rest consumed: the whole file goes, though it is smaller than the threshold moved.
    again = FrontierCompactor(files, threshold=64 << 10)
    again.punched[DOMAIN] = offset
    assert again.compact({DOMAIN: DomainCheckpoint(size)}).files == 1
    # At most its last block stays: punching past the end could hit a concurrent append.
    assert blocks(path) * 512 <= os.statvfs(path).f_bsize and path.stat().st_size == size
    assert files.read_from(DOMAIN, 0, 10)[0] == [] and files.read_from(DOMAIN, 0, 10)[1] == size
    assert complete_end(path) == size and scan_file(path).end == size
    assert read_seen(path) == [fingerprint_canonical(u) for u in urls]
    # Appends go on after the hole.
    files.append(DOMAIN, [FrontierRecord("http://a.example/new", 1, 1.0, 1)])
    assert [r.url for r in files.read_from(DOMAIN, 0, 10)[0]] == ["http://a.example/new"]
    files.close()


@pytest.mark.unit
def test_the_cut_is_a_line_start_at_or_before_the_offset(tmp_path: Path) -> None:
    files = FrontierFiles(tmp_path)
    fill(files, DOMAIN, urls_of(DOMAIN, 2000))
    _, offset = files.read_from(DOMAIN, 0, 1550)  # mid-batch
    fd = os.open(files.path_for(DOMAIN), os.O_RDONLY)
    try:
        assert line_cut(fd, offset) == offset
        assert line_cut(fd, offset + 5) == offset  # mid-line: back to its start
        assert line_cut(fd, 0) == 0
    finally:
        os.close(fd)
    # A checkpoint offset in the middle of a line loses no URL.
    FrontierCompactor(files, threshold=0).compact({DOMAIN: DomainCheckpoint(offset + 5)})
    assert [r.url for r in files.read_from(DOMAIN, 0, 10_000)[0]] == urls_of(DOMAIN, 2000)[1550:]
    files.close()


@pytest.mark.unit
def test_dry_run_counts_and_changes_nothing(tmp_path: Path) -> None:
    files = FrontierFiles(tmp_path)
    fill(files, DOMAIN, urls_of(DOMAIN, 4000))
    _, offset = files.read_from(DOMAIN, 0, 3000)
    directory = checkpoint_dir(tmp_path, "crawl")
    checkpoint = OffsetCheckpoint(directory, "s1")
    checkpoint.advance(DOMAIN, offset, 3000)
    checkpoint.close()
    before = disk_usage(tmp_path)
    dry = compact_crawl(tmp_path, "crawl", dry_run=True)
    assert disk_usage(tmp_path) == before and dry.files == 1 and dry.bytes_freed > 150_000
    done = compact_crawl(tmp_path, "crawl")
    after = disk_usage(tmp_path)
    assert done.bytes_freed == dry.bytes_freed and done.fingerprints == 3000
    seen_blocks = os.stat(str(files.path_for(DOMAIN)) + ".seen").st_blocks * 512
    assert after.frontier_disk_bytes == before.frontier_disk_bytes - done.bytes_freed + seen_blocks
    assert after.apparent_bytes == before.apparent_bytes and after.seen_bytes == 3000 * 16
    files.close()


async def rebuilt_after_compaction(redis_url: str, root: Path, name: str, *,
                                   cut_from_redis: bool) -> tuple[set[str], set[str], int]:
    """Queue URLs on 3 domains; consume some durably (the on-disk checkpoint) and more in
    Redis only (released, not yet checkpointed); compact (from the checkpoints, or from
    Redis's offsets: the wrong source); lose Redis and rebuild it. Returns (the URLs the
    rebuilt crawl reads, the URLs past the checkpoint, the queued URLs re-added)."""
    domains = [f"d{i}.example" for i in range(3)]
    crawl_id = ensure_crawl_id(root, name)
    directory = checkpoint_dir(root, name)
    checkpoint = OffsetCheckpoint(directory, "s1")
    expected: set[str] = set()
    queued: list[str] = []
    async with open_frontier(redis_url, root, name) as frontier:
        await set_epoch(frontier.redis, frontier.state.keys, crawl_id)
        for domain in domains:
            urls = urls_of(domain, 3000)
            queued += urls
            for i in range(0, len(urls), 200):
                await frontier.add_urls([(u, 1) for u in urls[i:i + 200]])
        redis_offsets: dict[str, int] = {}
        for domain in await frontier.claim("w1", len(domains), now=NOW):
            durable = await frontier.next_urls(domain, 1500)
            checkpoint.advance(domain, durable.end_offset, len(durable.records))
            later = await frontier.next_urls(domain, 1000, offset=durable.end_offset)
            await frontier.done(domain, "w1", NOW, new_offset=later.end_offset)
            redis_offsets[domain] = later.end_offset
            expected |= {r.url for r in later.records}
            expected |= set(urls_of(domain, 3000)[2500:])
        checkpoint.write()
        offsets = {d: DomainCheckpoint(o) for d, o in redis_offsets.items()} if cut_from_redis \
            else load_checkpoints(directory)
        report = FrontierCompactor(frontier.files, threshold=0).compact(offsets)
        assert report.files == len(domains)

        await rebuild_redis(frontier, root, load_checkpoints(directory), crawl_id=crawl_id)
        read: set[str] = set()
        for domain in await frontier.claim("w2", len(domains), now=NOW + 10):
            batch = await frontier.next_urls(domain, 10_000)
            read |= {r.url for r in batch.records}
        readded = (await frontier.add_urls([(u, 1) for u in queued])).added
    checkpoint.close()
    return read, expected, readded


def test_a_rebuild_after_compaction_loses_no_url_and_refetches_none(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    read, expected, readded = asyncio.run(
        rebuilt_after_compaction(redis_url, tmp_path, crawl_name, cut_from_redis=False))
    assert read == expected  # every URL past the checkpoint, and none before it
    assert readded == 0  # the seen filter still knows the punched URLs


def test_cutting_at_redis_offsets_would_lose_urls(redis_url: str, crawl_name: str,
                                                  tmp_path: Path) -> None:
    """The check above notices a cut taken from the wrong (larger) offset: Redis's read
    offset runs ahead of the on-disk checkpoint a rebuild restarts from."""
    read, expected, _ = asyncio.run(
        rebuilt_after_compaction(redis_url, tmp_path, crawl_name, cut_from_redis=True))
    assert read < expected and len(expected - read) == 3 * 1000


@pytest.mark.unit
def test_each_file_is_compacted_by_one_process_of_several() -> None:
    domains = [f"d{i}.example" for i in range(300)]
    for parts in (1, 2, 3):
        owners = [[p for p in range(parts) if in_part(d, p, parts)] for d in domains]
        assert all(len(o) == 1 for o in owners)
        assert {o[0] for o in owners} == set(range(parts))
