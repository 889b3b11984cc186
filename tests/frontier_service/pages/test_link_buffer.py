"""LinkBuffer: junk links are refused with a reason, odd-but-valid URLs are queued canonical;
a batch being added is in the link journal."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from frontier_service.frontier.frontier import AddResult
from frontier_service.frontier.frontier_files import FrontierFiles
from frontier_service.frontier.frontier_record import Queued
from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.link_buffer import LinkBuffer
from frontier_service.pages.link_journal import LinkJournal, link_journal_dir
from frontier_service.scope.crawl_scope import Scope
from frontier_service.service.crawler_parts import open_frontier
from tests.frontier_service.bad_urls import ACCEPTED, REFUSED, bad_url_settings


def test_links_are_canonical_lines_or_refused(tmp_path: Path, redis_url: str,
                                              crawl_name: str) -> None:
    metrics = CrawlMetrics()

    async def main() -> None:
        async with open_frontier(bad_url_settings(tmp_path, redis_url, crawl_name)) as (frontier, _):
            buffer = LinkBuffer(frontier, Scope(("*.test",)), metrics)
            assert buffer.add([*ACCEPTED, *REFUSED], depth=1) == len(ACCEPTED)
            assert await buffer.flush() == len(ACCEPTED)

    asyncio.run(main())
    assert metrics.links_invalid + metrics.links_out_of_scope == len(REFUSED)
    files = FrontierFiles(tmp_path / "data")
    lines = []
    for path in (tmp_path / "data" / "frontiers").rglob("*.frontier"):
        lines += path.read_bytes().split(b"\n")
    urls = {line.rsplit(b"|", 3)[0].decode() for line in lines if line}
    assert urls == set(ACCEPTED.values())
    assert files.corrupt_lines == 0


def test_a_batch_being_added_is_in_the_journal(tmp_path: Path, redis_url: str, crawl_name: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A process killed during a flush's add (its seen filter marked, its append not done)
    leaves the whole batch in its journal, though a checkpoint ran meanwhile: the pages
    it released must not take their links with them."""
    urls = [f"http://site0005.test/p{n}" for n in range(4)]

    async def main() -> set[str]:
        async with open_frontier(bad_url_settings(tmp_path, redis_url, crawl_name)) as (frontier, _):
            journal = LinkJournal(tmp_path, str(uuid.uuid4()))
            buffer = LinkBuffer(frontier, Scope(("*.test",)), CrawlMetrics(), journal=journal)
            buffer.add(urls[:2], depth=1)
            buffer.journal_pending()  # a checkpoint
            buffer.add(urls[2:], depth=1)  # found after it: not journaled yet
            adding, killed = asyncio.Event(), asyncio.Event()

            async def add_canonical(entries: Sequence[Queued]) -> AddResult:
                adding.set()
                await killed.wait()
                return AddResult(0, 0, 0)

            monkeypatch.setattr(frontier, "add_canonical", add_canonical)
            flush = asyncio.ensure_future(buffer.flush())
            await adding.wait()
            buffer.journal_pending()  # a checkpoint during the add: the pages are released
            lines = b"".join(path.read_bytes()
                             for path in link_journal_dir(tmp_path).glob("*.links"))
            killed.set()
            await flush
            journal.close()
            return {line.split(b"|")[0].decode() for line in lines.splitlines()}

    assert asyncio.run(main()) == set(urls)


def test_workers_wait_while_max_pending_links_wait(tmp_path: Path, redis_url: str,
                                                   crawl_name: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Links found faster than the frontier takes them are capped (they piled up without
    bound in a many-host crawl): `room` waits while max_pending are buffered or in the
    batch being added, and opens as the add's chunks go in."""
    urls = [f"http://site0007.test/p{n}" for n in range(10)]

    async def main() -> None:
        async with open_frontier(bad_url_settings(tmp_path, redis_url, crawl_name)) as (frontier, _):
            buffer = LinkBuffer(frontier, Scope(("*.test",)), CrawlMetrics(), max_pending=6,
                                chunk_urls=2, flush_urls=1_000)
            buffer.add(urls[:5], depth=1)
            await asyncio.wait_for(buffer.room(), 1.0)  # 5 < 6: room
            buffer.add(urls[5:], depth=1)
            assert buffer.backlog == 10
            waiting = asyncio.ensure_future(buffer.room())
            await asyncio.sleep(0.05)
            assert not waiting.done()

            add = frontier.add_canonical
            chunks: list[tuple[int, bool]] = []  # (backlog, room) as each chunk is added

            async def add_canonical(entries: Sequence[Queued]) -> AddResult:
                chunks.append((buffer.backlog, waiting.done()))
                return await add(entries)

            monkeypatch.setattr(frontier, "add_canonical", add_canonical)
            assert await buffer.flush() == 10
            await asyncio.wait_for(waiting, 1.0)
            # The batch being added counts until its chunks are in: room from 4 left on.
            assert [backlog for backlog, _ in chunks] == [10, 8, 6, 4, 2]
            assert [room for _, room in chunks[:3]] == [False, False, False]
            assert buffer.backlog == 0

    asyncio.run(main())


def test_holding_or_stopping_never_holds_workers_back(tmp_path: Path, redis_url: str,
                                                     crawl_name: str) -> None:
    """A full disk (links wait in the journal) or a stopping crawl (the drain must reach
    every worker) lets `room` return however many links wait."""
    urls = [f"http://site0008.test/p{n}" for n in range(4)]

    async def main() -> None:
        async with open_frontier(bad_url_settings(tmp_path, redis_url, crawl_name)) as (frontier, _):
            for release in ("holding", "stopping"):
                buffer = LinkBuffer(frontier, Scope(("*.test",)), CrawlMetrics(), max_pending=2)
                buffer.add(urls, depth=1)
                waiting = asyncio.ensure_future(buffer.room())
                await asyncio.sleep(0.05)
                assert not waiting.done()
                if release == "holding":
                    buffer.hold()
                else:
                    buffer.stop_holding_back()
                await asyncio.wait_for(waiting, 1.0)
                assert buffer.backlog == 4

    asyncio.run(main())
