"""The per-owner add path: a batch split into our new URLs' lines and the others' lines, and an
inbox read filtered at once."""

from __future__ import annotations

from pathlib import Path

from redis.asyncio import Redis

from archive_pipelines.canonical_urls import canonical_url_and_domain
from archive_testkit.frontier_bench.owner_batches import OwnerSplitter, filter_inbox
from archive_testkit.frontier_bench.owner_filter import OwnerSeenFilter
from frontier_service.frontier.frontier_record import (
    FrontierRecord,
    Queued,
    ResourceType,
    parse_line,
)
from frontier_service.frontier.keys import FrontierKeys
from frontier_service.frontier.machine_state import MachineState


def machine_owning(redis_url: str, slots: set[int]) -> MachineState:
    keys = FrontierKeys("t-owner-batches")
    state = MachineState(Redis.from_url(redis_url), keys, machine="m1", slots=4,
                         prefixes=[keys.domain_prefix, ""])
    state.mine = frozenset(slots)
    return state


def records(lines: bytes) -> list[FrontierRecord]:
    assert lines.endswith(b"\n")
    found = [parse_line(line) for line in lines.split(b"\n")[:-1]]
    assert None not in found
    return found  # type: ignore[return-value]


def test_our_new_urls_are_lines_by_domain_and_the_others_go_unfiltered(
        redis_url: str, tmp_path: Path) -> None:
    machine = machine_owning(redis_url, {0, 1})
    seen = OwnerSeenFilter(tmp_path / "seen.bloom", 10_000, error_rate=0.001)
    urls = [f"https://site{d}.example/p{i}" for i in range(6) for d in range(12)]
    entries: list[Queued] = [(canonical_url_and_domain(u), 1 + i % 3) for i, u in enumerate(urls)]
    entries.append((canonical_url_and_domain(urls[0]), 2))  # a repeat within the batch
    entries.append((canonical_url_and_domain("https://site0.example/logo.png"), 1,
                    ResourceType.IMAGE))
    ours = {e[0][1] for e in entries if machine.slot(e[0][1]) in machine.mine}
    assert 0 < len(ours) < 12

    splitter = OwnerSplitter(machine, seen)
    batch = splitter.split(entries, now=1_700_000_000)

    assert set(batch.ours) == ours and set(batch.theirs).isdisjoint(ours)
    for domain, lines in batch.ours.items():
        firsts: dict[str, Queued] = {}
        for entry in entries:
            if entry[0][1] == domain:
                firsts.setdefault(entry[0][0], entry)
        expected = [FrontierRecord(e[0][0], e[1], 1.0, 1_700_000_000,
                                   e[2] if len(e) == 3 else ResourceType.DOCUMENT)
                    for e in firsts.values()]
        assert records(lines) == expected  # in the order found, each URL once
        assert batch.counts[domain] == len(expected)
    theirs = [e for e in entries if e[0][1] not in ours]
    assert batch.sent == len(theirs) == sum(len(records(v)) for v in batch.theirs.values())

    again = splitter.split(entries, now=1_700_000_001)
    assert again.ours == {} and again.appended == 0
    assert again.sent == batch.sent  # the others' owners filter them

    machine.mine = frozenset({2, 3})  # a heartbeat: now the others' domains are ours
    swapped = splitter.split(entries, now=1_700_000_002)
    assert set(swapped.ours) == set(batch.theirs) and set(swapped.theirs) == ours


def test_an_inbox_read_keeps_each_unseen_url_once(tmp_path: Path) -> None:
    seen = OwnerSeenFilter(tmp_path / "seen.bloom", 10_000, error_rate=0.001)
    a = b"https://a.example/1|1|1|5\nhttps://a.example/2|2|1|5\n"
    entries = [("inbox:0", "1-0", {b"a.example": a}),
               ("inbox:1", "2-0", {b"a.example": b"https://a.example/2|1|1|6\n",
                                   b"b.example": b"https://b.example/x|1|1|6\n"})]
    kept = filter_inbox(seen, entries)
    assert kept == [("inbox:0", "1-0", {b"a.example": a}),
                    ("inbox:1", "2-0", {b"b.example": b"https://b.example/x|1|1|6\n"})]
    assert filter_inbox(seen, entries) == [("inbox:0", "1-0", {}), ("inbox:1", "2-0", {})]
