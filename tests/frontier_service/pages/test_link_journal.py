"""The link journal: links a killed process found are queued, with their kinds, on the next start."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from archive_pipelines.canonical_urls import canonical_url_and_domain
from frontier_service.frontier.frontier_record import ResourceType
from frontier_service.pages.link_journal import LinkJournal, replay_link_journals
from frontier_service.service.crawler_parts import open_frontier
from frontier_service.service.crawler_settings import CrawlerSettings


def test_links_of_a_crashed_session_are_queued_on_the_next_start(
        tmp_path: Path, redis_url: str, crawl_name: str) -> None:
    settings = CrawlerSettings(data_dir=tmp_path, redis_url=redis_url, crawl_name=crawl_name,
                               seen_capacity=10_000, visited_expected=1_000)
    journal = LinkJournal(tmp_path, str(uuid.uuid4()))
    urls = [f"http://site0002.test/s1/p{n}.html" for n in range(5)]
    journal.append([(canonical_url_and_domain(u), 1) for u in urls])
    journal._lock.close()  # dies before adding them to the frontier

    async def replay() -> tuple[int, int]:
        async with open_frontier(settings) as (frontier, _):
            added = await replay_link_journals(frontier, tmp_path)
            again = await replay_link_journals(frontier, tmp_path)
            records, _ = frontier.files.read_from("site0002.test", 0, 100)
        assert [r.url for r in records] == urls and {r.depth for r in records} == {1}
        return added, again

    assert asyncio.run(replay()) == (5, 0)


def test_link_journals_old_and_new_keep_each_links_kind(
        tmp_path: Path, redis_url: str, crawl_name: str) -> None:
    """A journal an earlier version wrote (`url|depth`) replays as documents; assets keep
    their kind through the journal into the frontier file."""
    settings = CrawlerSettings(data_dir=tmp_path, redis_url=redis_url, crawl_name=crawl_name,
                               seen_capacity=10_000, visited_expected=1_000)
    old = LinkJournal(tmp_path, str(uuid.uuid4()))
    old.write(b"http://site0003.test/old|2\nhttp://site0003.test/junk|2|no-such|kind\n")
    old._lock.close()
    new = LinkJournal(tmp_path, str(uuid.uuid4()))
    new.append([(canonical_url_and_domain("http://site0003.test/a.css"), 1, ResourceType.STYLESHEET),
                (canonical_url_and_domain("http://site0003.test/page"), 2),
                (canonical_url_and_domain("http://site0003.test/f.woff2"), 1, ResourceType.FONT)])
    new._lock.close()

    async def replay() -> list[tuple[str, int, ResourceType]]:
        async with open_frontier(settings) as (frontier, _):
            assert await replay_link_journals(frontier, tmp_path) == 4
            records, _ = frontier.files.read_from("site0003.test", 0, 100)
        return [(r.url, r.depth, r.kind) for r in records]

    assert sorted(asyncio.run(replay())) == [
        ("http://site0003.test/a.css", 1, ResourceType.STYLESHEET),
        ("http://site0003.test/f.woff2", 1, ResourceType.FONT),
        ("http://site0003.test/old", 2, ResourceType.DOCUMENT),
        ("http://site0003.test/page", 2, ResourceType.DOCUMENT)]


def test_links_marked_seen_by_a_killed_add_are_queued_once(
        tmp_path: Path, redis_url: str, crawl_name: str) -> None:
    """Killed between the seen filter's add and the file append: its links are seen but in
    no file. The replay queues them (and the unseen one), not those already queued."""
    settings = CrawlerSettings(data_dir=tmp_path, redis_url=redis_url, crawl_name=crawl_name,
                               seen_capacity=10_000, visited_expected=1_000)
    entries = [(canonical_url_and_domain(f"http://site0004.test/p{n}"), 1) for n in range(5)]
    journal = LinkJournal(tmp_path, str(uuid.uuid4()))
    journal.append(entries + entries[3:4])  # a line twice (a retried flush journals it again)
    journal._lock.close()

    async def replay() -> tuple[int, list[str]]:
        async with open_frontier(settings) as (frontier, _):
            await frontier.add_canonical(entries[:2])  # queued before the kill
            await frontier.seen.add_many([entry[0][2] for entry in entries[2:4]])  # seen only
            added = await replay_link_journals(frontier, tmp_path)
            records, _ = frontier.files.read_from("site0004.test", 0, 100)
        return added, [r.url for r in records]

    added, queued = asyncio.run(replay())
    assert added == 3 and sorted(queued) == [f"http://site0004.test/p{n}" for n in range(5)]
