"""Several machines on one crawl, in-process: slots shared out, URLs sent to their owners,
a dead machine's slots taken over and its lines sent on when it is back, or counted lost."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

from archive_pipelines.canonical_urls import try_canonical_url_and_domain
from frontier_service.frontier.frontier_files import walk
from frontier_service.frontier.machine_state import GROUP, forget_machine, machines_view
from frontier_service.machines.inbox import InboxConsumer
from frontier_service.recovery.disk_frontier import file_fingerprints
from tests.frontier_service.frontier.helpers import open_frontier
from tests.frontier_service.machines.machines_kit import (
    SLOTS,
    domains_of,
    file_domains,
    join,
    join_two,
    unread_urls,
)


def urls_for(domains: list[str], per_domain: int) -> list[tuple[str, int]]:
    return [(f"http://{d}/p{i}", 1) for d in domains for i in range(per_domain)]


def test_a_machine_that_joins_gets_its_share_from_the_first(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with (open_frontier(redis_url, tmp_path / "a", crawl_name) as fa,
                    open_frontier(redis_url, tmp_path / "b", crawl_name) as fb):
            a = await join(fa, "A")
            assert a.machine.mine == frozenset(range(SLOTS))  # alone: every slot
            b = await join(fb, "B")
            assert b.machine.mine == frozenset()  # none free
            beat = await a._beat()
            assert (beat.live, beat.give) == (2, SLOTS // 2)
            await a._balance(beat)
            await b._beat()
            assert len(a.machine.mine) == len(b.machine.mine) == SLOTS // 2
            assert not a.machine.mine & b.machine.mine
            view = await machines_view(fa.redis, fa.state.keys)
            assert sorted(len(s) for s in view.slots.values()) == [SLOTS // 2] * 2

    asyncio.run(main())


def test_urls_go_to_the_owner_of_their_domain_and_claims_stay_home(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with (open_frontier(redis_url, tmp_path / "a", crawl_name, steal_after_s=0.0) as fa,
                    open_frontier(redis_url, tmp_path / "b", crawl_name) as fb):
            a, b = await join_two(fa, fb)
            mine_a, mine_b = domains_of(a, 5), domains_of(b, 5)
            urls = urls_for(mine_a + mine_b, 4)
            result = await fa.add_urls(urls)  # A found them all
            assert result.added == 40
            assert file_domains(tmp_path / "a") == set(mine_a)  # B's went to B's inbox
            assert file_domains(tmp_path / "b") == set()
            inbox = InboxConsumer(fb, consumer="b1", block_ms=10)
            assert await inbox.poll() >= 1
            assert file_domains(tmp_path / "b") == set(mine_b)
            assert sorted(await unread_urls(fa) + await unread_urls(fb)) == sorted(u for u, _ in urls)
            assert await b.machine.inbox_lengths() == 0  # acknowledged and deleted
            # A never claims B's domains, however long they have been due
            claimed_a = await fa.claim("wa", 100, now=time.time() + 60)
            claimed_b = await fb.claim("wb", 100, now=time.time() + 60)
            assert sorted(claimed_a) == sorted(mine_a) and sorted(claimed_b) == sorted(mine_b)

    asyncio.run(main())


def test_a_dead_machines_lines_are_sent_on_when_it_comes_back(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with (open_frontier(redis_url, tmp_path / "a", crawl_name) as fa,
                    open_frontier(redis_url, tmp_path / "b", crawl_name) as fb):
            a = await join(fa, "A", lease_seconds=5)
            domains = domains_of(a, 20)
            urls = urls_for(domains, 10)
            await fa.add_urls(urls)
            batch = await fa.next_urls(domains[0], 3)  # 3 of them fetched before A died
            fetched = [r.url for r in batch.records]
            await _release(fa, domains[0], batch.end_offset)
            # A dies; B comes after A's lease ran out and takes every slot
            b = await join(fb, "B")
            later = time.time() + 6
            beat = await b.machine.heartbeat(later, lease_seconds=30)
            assert beat.mine == frozenset(range(SLOTS))
            assert await fb.claim("wb", 100, now=later + 60) == []  # their lines are on A
            view = await machines_view(fb.redis, fb.state.keys)
            assert view.orphaned_domains["A"] == 20
            await fb.add_urls([(f"http://{domains[1]}/new", 1)])  # B finds a new URL of one
            # A comes back: it sends its lines on to B
            a2 = await join(fa, "A")
            assert a2.machine.mine == frozenset()
            report = await a2.send_strays()
            assert report.domains_sent == 20 and report.bytes_missing == 0
            assert await unread_urls(fa) == []  # nothing of A's left to fetch
            assert (await a2.send_strays()).domains_sent == 0  # sent once
            inbox = InboxConsumer(fb, consumer="b1", block_ms=10)
            while await inbox.poll():
                pass
            left = await unread_urls(fb)
            expected = [u for u, _ in urls if u not in fetched] + [f"http://{domains[1]}/new"]
            assert Counter(left) == Counter(expected)  # every URL once, none fetched again
            view = await machines_view(fb.redis, fb.state.keys)
            assert view.orphaned_domains["A"] == 0 and view.orphaned_bytes.get("A", 0) == 0

    asyncio.run(main())


async def _release(frontier, domain: str, offset: int) -> None:  # type: ignore[no-untyped-def]
    await frontier.redis.hset(frontier.state.keys.domain(domain), "read_offset", offset)


def test_a_machine_gone_for_good_is_counted_lost(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with (open_frontier(redis_url, tmp_path / "a", crawl_name) as fa,
                    open_frontier(redis_url, tmp_path / "b", crawl_name) as fb):
            a = await join(fa, "A", lease_seconds=5)
            domains = domains_of(a, 7)
            await fa.add_urls(urls_for(domains, 3))
            queued = (await fa.stats()).counters["bytes_appended"]
            b = await join(fb, "B")
            later = time.time() + 6
            await b.machine.heartbeat(later, lease_seconds=30)
            assert await fb.claim("wb", 100, now=later + 60) == []
            lost_domains, lost_bytes = await forget_machine(fb.redis, fb.state.keys, "A")
            assert (lost_domains, lost_bytes) == (7, queued)
            counters = await fb.state.counters()
            assert counters["domains_lost_with_machines"] == 7
            assert counters["bytes_lost_with_machines"] == queued

    asyncio.run(main())


def test_a_redelivered_entry_is_not_queued_twice(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    """A consumer that appended an entry's lines and died before recording them: the
    entry is taken again, and the lines already in the file are recorded, not appended."""
    async def main() -> None:
        async with (open_frontier(redis_url, tmp_path / "a", crawl_name) as fa,
                    open_frontier(redis_url, tmp_path / "b", crawl_name) as fb):
            _a, b = await join_two(fa, fb)
            theirs = domains_of(b, 2)
            await fa.add_urls(urls_for(theirs, 5))
            stream = fb.state.keys.inbox(b.machine.slot(theirs[0]))
            found = await fb.redis.xreadgroup(GROUP, "dead", {stream: ">"}, count=1)
            _entry_id, fields = found[0][1][0]
            for domain, lines in fields.items():  # the dead consumer's append, unrecorded
                fb.files.append_lines(domain.decode(), lines)
            inbox = InboxConsumer(fb, consumer="b2", reclaim_idle_s=0.0, block_ms=10)
            assert await inbox.reclaim() == 1
            assert inbox.already_appended == sum(v.count(b"\n") for v in fields.values())
            while await inbox.poll():
                pass
            urls = await unread_urls(fb)
            assert Counter(urls) == Counter(u for u, _ in urls_for(theirs, 5))

    asyncio.run(main())


def test_lines_of_a_slot_that_moved_meanwhile_are_sent_on(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    """A stale view of its slots: the append is refused, the lines go to the new owner's
    inbox, and the ones left in our file past the recorded size are never read."""
    async def main() -> None:
        async with (open_frontier(redis_url, tmp_path / "a", crawl_name) as fa,
                    open_frontier(redis_url, tmp_path / "b", crawl_name) as fb):
            a, b = await join_two(fa, fb)
            theirs = domains_of(b, 1)
            a.machine.mine = frozenset(range(SLOTS))  # A has not heard yet
            await fa.add_urls(urls_for(theirs, 3))
            assert file_domains(tmp_path / "a") == set(theirs)  # appended, but refused:
            assert await fa.redis.hget(fa.state.keys.domain(theirs[0]), "size") is None
            inbox = InboxConsumer(fb, consumer="b1", block_ms=10)
            while await inbox.poll():
                pass
            assert Counter(await unread_urls(fb)) == Counter(u for u, _ in urls_for(theirs, 3))
            await a._beat()  # A hears
            report = await a.send_strays()  # A's stale lines: not sent again
            assert report.domains_sent == 0 and report.not_ours == 1

    asyncio.run(main())


def test_walk_sees_emptied_files_as_empty(tmp_path: Path) -> None:
    assert list(walk(tmp_path)) == []


def test_links_a_dead_session_may_have_sent_are_checked_by_their_owner(
        redis_url: str, crawl_name: str, tmp_path: Path) -> None:
    """A replay cannot tell links its dead session sent before it died from links it only
    marked seen: it sends both to be checked; the owner drops those its file holds."""
    async def main() -> None:
        async with (open_frontier(redis_url, tmp_path / "a", crawl_name) as fa,
                    open_frontier(redis_url, tmp_path / "b", crawl_name) as fb):
            _a, b = await join_two(fa, fb)
            theirs = domains_of(b, 1)[0]
            sent = [(f"http://{theirs}/sent{i}", 1) for i in range(3)]
            await fa.add_urls(sent)  # sent before the death
            inbox = InboxConsumer(fb, consumer="b1", block_ms=10, on_disk=file_fingerprints)
            while await inbox.poll():
                pass
            lost = [(f"http://{theirs}/lost{i}", 1) for i in range(2)]  # seen, never sent
            entries = [(try_canonical_url_and_domain(u), d) for u, d in sent + lost]
            await fa.seen.add_many([e[0][2] for e in entries])  # type: ignore[index]
            await fa.queue_seen(entries, offered=0, owners_check=True)  # type: ignore[arg-type]
            while await inbox.poll():
                pass
            assert inbox.already_queued == 3
            assert Counter(await unread_urls(fb)) == Counter(u for u, _ in sent + lost)

    asyncio.run(main())
