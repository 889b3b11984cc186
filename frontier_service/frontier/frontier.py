"""The Frontier facade the crawler uses: add URLs, claim domains, read their URLs, release them.

Adding a batch is: canonicalize, one seen-filter call, one file append per domain, one
record_appends call, which also counts `urls_offered` (a batch with no new URL skips it
unless a second has passed since the last one). A crash between the seen-filter call and
the file append leaves those URLs seen but not queued: the replay of the crashed run's link
journal (pages/link_journal.py) queues them, asking the files rather than the seen filter.
A crash after the append but before record_appends leaves the lines in the file: a reader
of that domain reads them anyway (it reads to the end of the file), and an idle domain
picks them up with its next append.

Within a domain URLs come out in the order they were added (priority is stored, not used
for ordering); across domains, claims go to the domains whose next fetch time is earliest.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin

from redis.asyncio import Redis

from archive_pipelines.canonical_urls import try_canonical_many
from frontier_service.frontier.domain_meta import DomainMeta
from frontier_service.frontier.frontier_files import FrontierFiles
from frontier_service.frontier.frontier_record import FrontierRecord, LineEnds, Queued
from frontier_service.frontier.machine_state import MachineState
from frontier_service.frontier.seen import Backend, SeenFilter
from frontier_service.frontier.state import HOST_GATES, FrontierState, Release, Reschedule
from frontier_service.frontier.visited import VisitedRecord, VisitedStore

_OFFERED_EVERY_S = 1.0


@dataclass(frozen=True, slots=True)
class FrontierConfig:
    """One crawl's frontier: its Redis key prefix, lease length and filter sizes."""

    name: str = "crawl"
    lease_seconds: float = 120.0
    host_gates: str = HOST_GATES  # the host gates' key prefix, shared by all crawls ('' = none)
    seen_capacity: int = 10_000_000
    seen_error_rate: float = 0.001
    seen_backend: Backend = "auto"
    visited_expected: int = 1_000_000
    max_open_files: int | None = None  # default: half of RLIMIT_NOFILE, at most 8192
    shard: int = 0  # claims prefer this shard's domains (one process per shard) ...
    shards: int = 1
    steal_after_s: float = 2.0  # ... and take other shards' once due this long


@dataclass(frozen=True, slots=True)
class AddResult:
    added: int
    duplicate: int
    invalid: int


@dataclass(frozen=True, slots=True)
class DomainBatch:
    """URLs read from a domain's file; pass end_offset to `done` once they are handled."""

    domain: str
    records: list[FrontierRecord]
    start_offset: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class FrontierStats:
    pending_bytes: int
    ready_domains: int
    due_domains: int
    leased_domains: int
    counters: dict[str, int] = field(default_factory=dict)


class Frontier:
    """Redis coordination plus per-domain files under `root`; call `open()` before use."""

    def __init__(self, redis: Redis, root: Path, config: FrontierConfig | None = None) -> None:
        self.config = config or FrontierConfig()
        self.redis = redis
        self.files = FrontierFiles(root, max_open_files=self.config.max_open_files)
        self.state = FrontierState(redis, self.config.name, shard=self.config.shard,
                                   shards=self.config.shards,
                                   steal_after_s=self.config.steal_after_s,
                                   host_gates=self.config.host_gates)
        self.meta = DomainMeta(redis, self.config.name)
        keys = self.state.keys
        self.seen = SeenFilter(redis, keys.seen, self.config.seen_capacity,
                               error_rate=self.config.seen_error_rate, backend=self.config.seen_backend)
        self.visited = VisitedStore(redis, keys.visited,
                                    expected_records=self.config.visited_expected)
        self.machine: MachineState | None = None  # several machines: see own_slots
        self._offered_unrecorded = 0  # offered URLs not yet in the urls_offered counter
        self._offered_recorded_at = 0.0

    async def open(self) -> Frontier:
        await self.seen.open()
        await self.visited.open()
        return self

    def close(self) -> None:
        self.files.close()

    async def add_urls(self, urls_with_depth: Iterable[tuple[str, int]], *,
                       discovered_from: str | None = None, priority: float = 1.0) -> AddResult:
        """Queue new URLs: relative ones are resolved against discovered_from."""
        now = int(time.time())
        links = list(urls_with_depth)
        if discovered_from is not None:
            links = [(u if u.startswith(("http://", "https://")) else urljoin(discovered_from, u),
                      depth) for u, depth in links]
        parsed = try_canonical_many([url for url, _ in links])
        valid = [(found, depth) for found, (_, depth) in zip(parsed, links, strict=True)
                 if found is not None]
        invalid = len(links) - len(valid)
        result = await self.add_canonical(valid, priority=priority, now=now)
        return AddResult(result.added, result.duplicate, invalid)

    async def add_canonical(self, entries: Sequence[Queued], *,
                            priority: float = 1.0, now: int | None = None) -> AddResult:
        """add_urls for URLs already canonicalized: ((canonical URL, domain, fingerprint), depth)
        as `urls.canonical_url_and_domain` returns them (a caller that filtered on them has),
        with what the URL is for as a third item when it is not a document."""
        if not entries:
            return AddResult(0, 0, 0)
        is_new = await self.seen.add_many([entry[0][2] for entry in entries])
        new = [entry for fresh, entry in zip(is_new, entries, strict=True) if fresh]
        added = await self.queue_seen(new, offered=len(entries), priority=priority, now=now)
        return AddResult(added, len(entries) - added, 0)

    async def queue_seen(self, entries: Sequence[Queued], *, offered: int,
                         priority: float = 1.0, now: int | None = None,
                         owners_check: bool = False) -> int:
        """The second half of add_canonical: append URLs already in the seen filter to their
        domains' files and record them; returns how many. `offered` URLs are counted.
        `owners_check` (several machines): the owners of other machines' domains drop the
        URLs their files already hold (a dead session's replay: it may have sent them)."""
        now = int(time.time()) if now is None else now
        # Canonical URLs never hold `|`, CR, LF or spaces: they go into lines as they are.
        ends = LineEnds(priority, added_at=now)
        lines: dict[str, list[str]] = {}
        for entry in entries:
            found = entry[0]
            pending = lines.get(found[1])
            if pending is None:
                lines[found[1]] = pending = []
            pending.append(found[0] + (ends[entry[1]] if len(entry) == 2 else ends.of(entry)))
        if self.machine is not None:
            await self._add_owned(lines, offered=offered, now=now, owners_check=owners_check)
            return sum(len(pending) for pending in lines.values())
        appends: list[tuple[str, int, int]] = []
        if lines:
            batches = {domain: "".join(pending).encode() for domain, pending in lines.items()}
            offsets = await asyncio.to_thread(self.files.append_many, batches)
            appends = [(domain, offsets[domain][1], len(lines[domain])) for domain in lines]
        # The URLs offered (new or not) ride along; an all-duplicate batch's wait for the
        # next call, or at most _OFFERED_EVERY_S (no round trip just to count them).
        offered += self._offered_unrecorded
        clock = time.monotonic()
        if appends or clock - self._offered_recorded_at >= _OFFERED_EVERY_S:
            self._offered_unrecorded, self._offered_recorded_at = 0, clock
            await self.state.record_appends(now, appends, offered=offered)
        else:
            self._offered_unrecorded = offered
        return sum(len(pending) for pending in lines.values())

    def own_slots(self, machine: MachineState) -> None:
        """Several machines: from now on this frontier appends only the domains of the slots
        `machine` owns to its files, sends the others' to their owners' inboxes, and claims
        only its own (frontier_service/machines/)."""
        self.machine = machine
        self.state.own_slots(machine.machine, machine.slots)

    async def _add_owned(self, lines: dict[str, list[str]], *, offered: int, now: int,
                         owners_check: bool = False) -> None:
        machine = self.machine
        assert machine is not None
        batches = {domain: "".join(pending).encode() for domain, pending in lines.items()}
        ours = {d: b for d, b in batches.items() if machine.slot(d) in machine.mine}
        theirs = {d: b for d, b in batches.items() if d not in ours}
        refused = await self.append_owned(ours, counts={d: len(lines[d]) for d in ours},
                                          offered=offered, now=now)
        theirs.update((d, ours[d]) for d in refused)
        await machine.send(theirs, check=owners_check)

    async def append_owned(self, batches: dict[str, bytes], *, counts: dict[str, int],
                           offered: int = 0, now: float | None = None,
                           ack: Sequence[tuple[str, str]] = (),
                           appended: dict[str, tuple[int, int]] | None = None) -> list[str]:
        """Append lines to this machine's files and record them; returns the domains whose
        slot turned out not to be ours (their lines are in our file past the size Redis
        records, never read: send them on). `appended`: (start, end) of lines already in
        the files, only to be recorded; `ack`: the inbox entries they came from, acknowledged
        with the record when nothing was refused."""
        assert self.machine is not None
        offsets = await asyncio.to_thread(self.files.append_many, batches) if batches else {}
        offsets.update(appended or {})
        appends = [(d, start, end, counts[d]) for d, (start, end) in offsets.items()]
        if not appends and not offered and not ack:
            return []
        _, refused = await self.machine.record_owned(
            time.time() if now is None else now, appends, offered=offered, ack=ack)
        return refused

    async def flush_offered(self) -> None:
        """Count the offered URLs add_canonical has not sent yet (all-duplicate batches)."""
        offered, self._offered_unrecorded = self._offered_unrecorded, 0
        if offered:
            self._offered_recorded_at = time.monotonic()
            await self.state.record_appends(int(time.time()), [], offered=offered)

    async def claim(self, worker_id: str, n: int = 1, *, now: float | None = None) -> list[str]:
        """Lease up to n due domains to worker_id for config.lease_seconds."""
        return await self.state.claim(worker_id, time.time() if now is None else now,
                                      self.config.lease_seconds, max_domains=n)

    async def next_urls(self, domain: str, max_n: int, *, offset: int | None = None) -> DomainBatch:
        """Up to max_n URLs of a leased domain, from offset (default: its stored read offset)."""
        start = await self.state.read_offset(domain) if offset is None else offset
        records, end = await asyncio.to_thread(self.files.read_from, domain, start, max_n)
        return DomainBatch(domain, records, start, end)

    async def done(self, domain: str, worker_id: str, next_fetch_at: float,
                   *, new_offset: int) -> bool:
        """Release a leased domain; False if the lease had expired and was taken over."""
        return await self.state.reschedule(domain, worker_id, next_fetch_at, new_read_offset=new_offset)

    async def done_many(self, worker_id: str, items: Sequence[Reschedule], *,
                        now: float | None = None) -> list[Release]:
        return await self.state.reschedule_many(worker_id, items, now=now)

    async def release_and_claim(self, worker_id: str, done: Sequence[Reschedule], n: int, *,
                                now: float | None = None) -> tuple[list[Release], list[str]]:
        """Release finished domains and lease up to n more in one round trip."""
        return await self.state.release_and_claim(
            worker_id, done, time.time() if now is None else now,
            lease_seconds=self.config.lease_seconds, max_domains=n)

    async def mark_visited(self, records: Sequence[VisitedRecord]) -> int:
        return await self.visited.mark_many(records)

    async def stats(self, *, now: float | None = None) -> FrontierStats:
        """A consistent snapshot (MULTI/EXEC) of queue sizes and counters."""
        keys = self.state.keys
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zcard(keys.ready)
            pipe.zcount(keys.ready, "-inf", time.time() if now is None else now)
            pipe.zcard(keys.leases)
            pipe.hgetall(keys.counters)
            ready, due, leased, raw = await pipe.execute()
        counters = {_text(k): int(v) for k, v in raw.items()}
        pending = counters.get("bytes_appended", 0) - counters.get("bytes_consumed", 0)
        return FrontierStats(max(0, pending), int(ready), int(due), int(leased), counters)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
