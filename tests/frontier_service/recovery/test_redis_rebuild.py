"""Rebuilding a crawl's Redis from the frontier files and checkpoints, and auditing it for
partial loss, against real redis-servers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from archive_pipelines.canonical_urls import canonical_url_and_domain, url_fingerprint
from archive_pipelines.embedded_redis import LocalRedis
from frontier_service.frontier.checkpoint import (
    DomainCheckpoint,
    OffsetCheckpoint,
    checkpoint_dir,
    load_checkpoints,
)
from frontier_service.frontier.domain_meta import DomainInfo, DomainMeta
from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.frontier_files import domain_from_file_name, frontier_file_name, walk
from frontier_service.frontier.frontier_record import ResourceType
from frontier_service.recovery import disk_frontier
from frontier_service.recovery.audit import EpochChanged, audit
from frontier_service.recovery.epoch import (
    EpochState,
    check_epoch,
    ensure_crawl_id,
    has_disk_state,
    set_epoch,
)
from frontier_service.recovery.redis_rebuild import rebuild_redis
from tests.frontier_service.frontier.helpers import connect, open_frontier

NOW = 1_800_000_000.0
# A domain key long enough that its file name is hashed (it cannot be read back).
LONG = ".".join(["a" * 60, "b" * 60, "c" * 60, "d" * 40, "example"])
DOMAINS = [f"d{i}.example" for i in range(12)] + ["port.example:8080", LONG]


@pytest.fixture(scope="module")
def own_redis_url() -> Iterator[str]:
    """A redis-server of this module's own, so FLUSHALL wipes nobody else's keys."""
    with LocalRedis() as server:
        yield server.url


def urls_of(domain: str, n: int) -> list[str]:
    return [f"http://{domain}/page{i}" for i in range(n)]


async def fill(frontier: Frontier, checkpoint: OffsetCheckpoint) -> None:
    """Queue 5 to 16 URLs per domain; fetch some of them (claim, release, checkpoint);
    exclude one domain and fetch another to its end."""
    for i, domain in enumerate(DOMAINS):
        await frontier.add_urls([(url, 1) for url in urls_of(domain, 5 + i)])
    leased = await frontier.claim("w1", 6, now=NOW)
    assert len(leased) == 6
    for n, domain in enumerate(leased):
        batch = await frontier.next_urls(domain, 100 if n == 0 else 2)  # the first: all
        for _ in batch.records:
            await frontier.meta.record_fetch(domain, response_ms=5.0, ok=True)
        checkpoint.advance(domain, batch.end_offset, len(batch.records))
        await frontier.done(domain, "w1", NOW, new_offset=batch.end_offset)
    excluded = next(d for d in DOMAINS if d not in leased)
    await frontier.state.exclude(excluded, "host unreachable: refused")
    checkpoint.exclude(excluded, "host unreachable: refused")
    checkpoint.write()


async def ready_domains(redis: Redis, key: str) -> set[str]:
    return {d.decode() if isinstance(d, bytes) else str(d) for d in await redis.zrange(key, 0, -1)}


async def snapshot(redis: Redis, frontier: Frontier) -> dict[str, DomainInfo]:
    meta = DomainMeta(redis, frontier.config.name)
    return {domain: await meta.info(domain) for domain in DOMAINS}


@pytest.mark.unit
def test_domain_from_file_name_inverts_frontier_file_name() -> None:
    for domain in ["a.example", "example.com:8080", "[::1]:8080", ".x", "xn--bcher-kva.de"]:
        assert domain_from_file_name(frontier_file_name(domain)) == domain
    assert domain_from_file_name(frontier_file_name(LONG)) is None  # hashed
    assert domain_from_file_name("a.example.txt") is None
    assert domain_from_file_name("A.frontier") is None  # frontier_file_name never makes it


@pytest.mark.unit
def test_walk_lists_frontier_files_only(tmp_path: Path) -> None:
    (tmp_path / "frontiers" / ".journals").mkdir(parents=True)
    (tmp_path / "frontiers" / "checkpoints" / "c").mkdir(parents=True)
    (tmp_path / "frontiers" / "0a").mkdir()
    (tmp_path / "frontiers" / "0a" / "a.example.frontier").write_bytes(b"\nx|0|1|1\n")
    (tmp_path / "frontiers" / "0a" / "notes.txt").write_text("")
    assert list(walk(tmp_path)) == [
        ("a.example", tmp_path / "frontiers" / "0a" / "a.example.frontier", 9)]
    assert list(walk(tmp_path / "none")) == []


def test_rebuild_after_flushall_restores_queues_offsets_and_seen(own_redis_url: str,
                                                                 tmp_path: Path) -> None:
    async def main() -> None:
        name = "crawl"
        crawl_id = ensure_crawl_id(tmp_path, name)
        directory = checkpoint_dir(tmp_path, name)
        checkpoint = OffsetCheckpoint(directory, "s1")
        async with open_frontier(own_redis_url, tmp_path, name) as frontier:
            redis = frontier.redis
            await set_epoch(redis, frontier.state.keys, crawl_id)
            await fill(frontier, checkpoint)
            before = await snapshot(redis, frontier)
            ready_before = await ready_domains(redis, frontier.state.keys.ready)
            counters_before = await frontier.state.counters()

            await redis.flushall()
            assert await check_epoch(redis, frontier.state.keys, crawl_id) is EpochState.EMPTY
            assert has_disk_state(tmp_path, name)
            report = await rebuild_redis(frontier, tmp_path, load_checkpoints(directory), crawl_id=crawl_id)

            assert await check_epoch(redis, frontier.state.keys, crawl_id) is EpochState.MATCH
            after = await snapshot(redis, frontier)
            for domain in DOMAINS:
                old, new = before[domain], after[domain]
                assert (new.size, new.read_offset, new.state, new.excluded, new.excluded_reason,
                        new.pages_fetched) == (old.size, old.read_offset, old.state,
                                               old.excluded, old.excluded_reason,
                                               old.pages_fetched), domain
            assert await ready_domains(redis, frontier.state.keys.ready) == ready_before
            counters = await frontier.state.counters()
            for counter in ("bytes_appended", "bytes_consumed", "urls_added", "pages_fetched"):
                assert counters[counter] == counters_before.get(counter, 0), counter
            queued = [url for i, d in enumerate(DOMAINS) for url in urls_of(d, 5 + i)]
            assert report.domains == len(DOMAINS) and report.urls == len(queued)
            assert report.seen_added == len(queued) and report.torn_lines == 0
            assert (report.ready, report.exhausted, report.excluded) == (len(DOMAINS) - 2, 1, 1)
            assert all(await frontier.seen.contains_many([url_fingerprint(u) for u in queued]))
            assert (await frontier.add_urls([(u, 1) for u in queued])).added == 0

            # The crawl goes on from where the checkpoint says.
            leased = await frontier.claim("w2", len(DOMAINS), now=NOW + 10)
            assert sorted(leased) == sorted(ready_before)
            for domain in leased:
                batch = await frontier.next_urls(domain, 1)
                i = DOMAINS.index(domain)
                fetched = before[domain].read_offset > 0
                assert batch.records[0].url == urls_of(domain, 5 + i)[2 if fetched else 0]
                assert await frontier.done(domain, "w2", NOW + 20, new_offset=batch.end_offset)

            again = await rebuild_redis(frontier, tmp_path, load_checkpoints(directory), crawl_id=crawl_id)
            assert (again.domains, again.urls, again.ready) == (report.domains, report.urls,
                                                                 report.ready)
        checkpoint.close()

    asyncio.run(main())


def test_rebuild_counts_torn_lines_and_stops_before_a_torn_tail(redis_url: str, crawl_name: str,
                                                                tmp_path: Path) -> None:
    async def main() -> None:
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            await frontier.add_urls([("http://t.example/a", 0), ("http://t.example/b", 0),
                                     (f"http://{LONG}/", 0)])
            path = frontier.files.path_for("t.example")
            whole = path.stat().st_size
            with open(path, "ab") as handle:  # a writer that died twice mid-append
                handle.write(b"\nhttp://t.example/c|0|1")
                handle.write(b"\nhttp://t.example/d|0|1|17000")
            report = await rebuild_redis(frontier, tmp_path, {}, crawl_id="id")
            # The long domain's file name is hashed: its first line names it.
            assert (report.domains, report.urls, report.torn_lines) == (2, 3, 1)
            assert (await frontier.meta.info(LONG)).size == frontier.files.size(LONG)
            info = await frontier.meta.info("t.example")
            assert (info.size, info.read_offset, info.state) == (whole + 24, 0, "ready")

    asyncio.run(main())


def test_big_files_are_read_in_parts(redis_url: str, crawl_name: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            urls = [f"http://big.example/{i}" for i in range(50)]
            await frontier.add_urls([(url, 0) for url in urls[:30]])
            await frontier.add_urls([(url, 0) for url in urls[30:]])
            whole = await rebuild_redis(frontier, tmp_path, {}, crawl_id="id")
            monkeypatch.setattr(disk_frontier, "BATCH_BYTES", 100)  # ~3 lines a part
            parts = await rebuild_redis(frontier, tmp_path, {}, crawl_id="id")
            assert (parts.domains, parts.urls, parts.seen_added, parts.bytes) == (
                whole.domains, whole.urls, whole.seen_added, whole.bytes) == (
                1, 50, 50, frontier.files.size("big.example"))
            assert all(await frontier.seen.contains_many([url_fingerprint(u) for u in urls]))

    asyncio.run(main())


def test_rebuild_leaves_other_crawls_robots_and_visited_alone(redis_url: str, crawl_name: str,
                                                              tmp_path: Path) -> None:
    async def main() -> None:
        others = [f"{crawl_name}x:counters", f"{crawl_name}:domain:a.example:counters",
                  f"{crawl_name}:robots:http://a.example", f"{crawl_name}:visited:meta"]
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            redis = frontier.redis
            for key in others:
                await redis.hset(key, "x", "1")
            await redis.hset(f"{crawl_name}:domain:gone.example", "size", "10")
            await redis.hset(f"{crawl_name}:domain:[::1]:8080", "size", "10")
            try:
                report = await rebuild_redis(frontier, tmp_path, {}, crawl_id="id")
                assert report.domains == 0
                for key in others:
                    assert await redis.exists(key), key
                assert not await redis.exists(f"{crawl_name}:domain:gone.example",
                                              f"{crawl_name}:domain:[::1]:8080")
            finally:
                await redis.delete(f"{crawl_name}x:counters")

    asyncio.run(main())


def test_a_rebuild_cut_short_leaves_no_epoch_and_runs_again(redis_url: str, crawl_name: str,
                                                            tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            await frontier.add_urls([(f"http://c{i}.example/", 0) for i in range(5)])
            await set_epoch(frontier.redis, frontier.state.keys, "id")

            async def broken(fingerprints: object) -> list[bool]:
                raise ConnectionError("Redis went away")

            monkeypatch.setattr(frontier.seen, "add_many", broken)
            with pytest.raises(ConnectionError):
                await rebuild_redis(frontier, tmp_path, {}, crawl_id="id")
            assert await check_epoch(frontier.redis, frontier.state.keys, "id") in (
                EpochState.EMPTY, EpochState.MISSING)
            monkeypatch.undo()
            report = await rebuild_redis(frontier, tmp_path, {}, crawl_id="id")
            assert (report.domains, report.ready, report.seen_added) == (5, 5, 5)
            assert await check_epoch(frontier.redis, frontier.state.keys, "id") is EpochState.MATCH

    asyncio.run(main())


def test_audit_repairs_partial_loss_and_leaves_a_leased_domain_alone(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        directory = checkpoint_dir(tmp_path, crawl_name)
        checkpoint = OffsetCheckpoint(directory, "s1")
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier, \
                connect(redis_url) as redis:
            keys = frontier.state.keys
            await set_epoch(redis, keys, "id")
            for domain in ("a.example", "b.example", "c.example", "l.example"):
                await frontier.add_urls([(f"http://{domain}/{i}", 0) for i in range(4)])
            assert len(await frontier.claim("w1", 4, now=NOW)) == 4
            for domain in ("a.example", "b.example", "c.example", "l.example"):
                batch = await frontier.next_urls(domain, 2)
                if domain in ("c.example", "l.example"):  # fetched two URLs, checkpointed
                    for _ in batch.records:
                        await frontier.meta.record_fetch(domain, response_ms=5.0, ok=True)
                    checkpoint.advance(domain, batch.end_offset, 2)
                    await frontier.done(domain, "w1", NOW if domain == "l.example" else NOW + 100,
                                        new_offset=batch.end_offset)
                else:  # handed back untouched
                    await frontier.done(domain, "w1", NOW + 100, new_offset=batch.start_offset)
            checkpoint.write()
            assert await frontier.claim("w1", 4, now=NOW + 1) == ["l.example"]  # in flight
            leased_before = await redis.hgetall(keys.domain("l.example"))
            size = frontier.files.size("a.example")
            c_offset = (await frontier.meta.info("c.example")).read_offset

            clean = await audit(frontier, tmp_path, load_checkpoints(directory), crawl_id="id")
            assert clean.repaired == 0 and clean.checked == 4 and clean.unfetched_domains == 4

            await redis.delete(keys.domain("a.example"))  # evicted
            await redis.hset(keys.domain("b.example"), "size", 10)  # a lagging replica
            await redis.hset(keys.domain("c.example"), "read_offset", 0)
            await redis.zrem(keys.ready, "c.example")
            report = await audit(frontier, tmp_path, load_checkpoints(directory), crawl_id="id")
            assert (report.checked, report.missing, report.size_repaired, report.offset_repaired,
                    report.requeued) == (4, 1, 1, 1, 1)
            assert report.unfetched_domains == 4 and report.seen_added == 0

            for domain in ("a.example", "b.example"):
                info = await frontier.meta.info(domain)
                assert (info.size, info.read_offset, info.state) == (size, 0, "ready"), domain
            info = await frontier.meta.info("c.example")
            assert (info.read_offset, info.state) == (c_offset, "ready")
            assert await redis.zscore(keys.ready, "c.example") is not None
            assert await redis.hgetall(keys.domain("l.example")) == leased_before
            assert await frontier.done("l.example", "w1", NOW + 2, new_offset=size) is True

            again = await audit(frontier, tmp_path, load_checkpoints(directory), crawl_id="id")
            assert again.repaired == 0 and again.unfetched_domains == 3
        checkpoint.close()

    asyncio.run(main())


def test_audit_requeues_stranded_domains_and_recreates_a_lost_seen_filter(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            redis, keys = frontier.redis, frontier.state.keys
            urls = [f"http://s{i}.example/" for i in range(6)]
            await frontier.add_urls([(url, 0) for url in urls])
            await redis.delete(keys.ready)  # evicted: every domain stranded in state 'r'
            await redis.hset(keys.domain("s0.example"), "state", "")  # idle with URLs left
            await redis.delete(*frontier.seen.shard_keys, frontier.seen.meta_key)
            await frontier.state.exclude("s1.example", "budget")
            await redis.hset(keys.domain("s2.example"), "excluded", "0")  # lost exclusion
            report = await audit(frontier, tmp_path, {"s2.example": DomainCheckpoint(0, 0, "budget")})
            assert report.seen_recreated and report.seen_added == 6
            assert (report.requeued, report.excluded_repaired, report.unfetched_domains) == (4, 1, 4)
            assert all(await frontier.seen.contains_many([url_fingerprint(u) for u in urls]))
            ready = await ready_domains(redis, keys.ready)
            assert ready == {"s0.example", "s3.example", "s4.example", "s5.example"}

            await redis.set(keys.epoch, "someone else")
            with pytest.raises(EpochChanged, match="rebuild it"):
                await audit(frontier, tmp_path, {}, crawl_id="id")

    asyncio.run(main())




def test_rebuild_from_files_with_and_without_kinds(redis_url: str, crawl_name: str,
                                                   tmp_path: Path) -> None:
    """A crawl upgraded midway: one domain's file was written before lines carried an asset's
    kind, another mixes both. A rebuild queues them all, and the kinds come back out."""
    async def main() -> None:
        old = [f"http://old.example/p{n}" for n in range(4)]
        async with open_frontier(redis_url, tmp_path, crawl_name) as frontier:
            frontier.files.append_lines("old.example", "".join(
                f"{url}|1|1|1700000000\n" for url in old).encode())
            frontier.files.append_lines("mixed.example", b"http://mixed.example/|0|1|1700000000\n")
            await frontier.add_canonical([
                (canonical_url_and_domain("http://mixed.example/s.css"), 0, ResourceType.STYLESHEET),
                (canonical_url_and_domain("http://mixed.example/p"), 1),
                (canonical_url_and_domain("http://mixed.example/f.woff2"), 0, ResourceType.FONT)])
            report = await rebuild_redis(frontier, tmp_path, {}, crawl_id="id")
            assert (report.domains, report.urls, report.torn_lines, report.ready) == (2, 8, 0, 2)
            queued = [*old, "http://mixed.example/", "http://mixed.example/s.css",
                      "http://mixed.example/p", "http://mixed.example/f.woff2"]
            assert all(await frontier.seen.contains_many([url_fingerprint(u) for u in queued]))
            assert (await frontier.add_urls([(u, 0) for u in queued])).added == 0
            leased = await frontier.claim("w", 2, now=NOW)
            assert sorted(leased) == ["mixed.example", "old.example"]
            got = {d: [(r.url, r.depth, r.kind) for r in (await frontier.next_urls(d, 10)).records]
                   for d in leased}
            assert got["old.example"] == [(u, 1, ResourceType.DOCUMENT) for u in old]
            assert got["mixed.example"] == [
                ("http://mixed.example/", 0, ResourceType.DOCUMENT),
                ("http://mixed.example/s.css", 0, ResourceType.STYLESHEET),
                ("http://mixed.example/p", 1, ResourceType.DOCUMENT),
                ("http://mixed.example/f.woff2", 0, ResourceType.FONT)]

    asyncio.run(main())
