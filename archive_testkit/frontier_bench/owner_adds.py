"""One owner (machine) of a crawl adding URLs, for bench/crawl_adds.py: a child process.

The child joins the crawl as a machine (MachineState + own_slots + MachineLoop, as
tests/frontier_service/machines/machines_kit.py does), waits until it holds its share of
the slots, builds and canonicalizes its URLs (untimed), then on "run" adds them with
`adders` concurrent callers while its InboxConsumer appends what the other owner sends it,
and on "drain" waits until its inboxes are empty. Its CPU time covers both. Before the
timed part each owner adds one URL per domain it owns (warm_up): its files exist.

Seen filter: "redis" is Frontier.add_canonical (the shared filter in Redis, one Lua call
per batch); "owner" is OwnerSeenFilter in this process: URLs of our slots' domains are
filtered here and appended (owner_batches.OwnerSplitter, then Frontier.append_owned), those
of other owners' domains are sent unfiltered and filtered by the receiving owner's consumer
before it appends them (a whole read at once).
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

from redis.asyncio import Redis

from archive_pipelines.canonical_urls import try_canonical_many
from archive_testkit.frontier_bench.owner_batches import OwnerSplitter, filter_inbox
from archive_testkit.frontier_bench.owner_filter import OwnerSeenFilter
from archive_testkit.frontier_bench.url_batches import make_batches
from frontier_service.frontier.frontier import Frontier, FrontierConfig
from frontier_service.frontier.frontier_record import Queued
from frontier_service.frontier.machine_state import MachineState
from frontier_service.machines.inbox import InboxConsumer
from frontier_service.machines.machine_loop import MachineLoop


@dataclass(frozen=True, slots=True)
class OwnerSpec:
    redis_url: str
    root: Path
    crawl: str
    index: int
    owners: int
    urls: int  # URLs this owner finds
    other_share: float  # of them, the share in the other owner's domains
    domains: int
    batch: int
    adders: int
    seen: str  # "redis" or "owner"
    canonicalize: bool  # add_urls (canonicalizes) instead of add_canonical
    capacity: int
    error_rate: float
    slots: int = 64


@dataclass(frozen=True, slots=True)
class OwnerRound:
    """One owner's run: URLs found and appended (own adds and from its inbox), seconds."""

    found: int
    appended_own: int
    sent: int
    received: int
    appended_received: int
    domains_per_batch: float
    add_wall: float
    wall: float
    cpu: float
    filter_flushes: int = 0

    @property
    def appended(self) -> int:
        return self.appended_own + self.appended_received


class FilteringInbox(InboxConsumer):
    """InboxConsumer that filters first when given an OwnerSeenFilter (a redelivered entry
    is not filtered: its bits were set before; the base class finds what was appended)."""

    def __init__(self, frontier: Frontier, *, consumer: str,
                 seen: OwnerSeenFilter | None) -> None:
        super().__init__(frontier, consumer=consumer, count=64, block_ms=20)
        self.seen = seen
        self.received = 0
        self.appended = 0

    async def take_many(self, entries: list[tuple[str, str, dict]]) -> None:
        received = sum(bytes(v).count(b"\n") for _, _, fields in entries for v in fields.values())
        self.received += received
        if self.seen is not None:
            entries = filter_inbox(self.seen, entries)
        before = self.lines
        await super().take_many(entries)
        self.appended += self.lines - before

    async def take(self, stream: str, entry_id: str, fields: dict, *, redelivered: bool) -> None:
        received = sum(bytes(v).count(b"\n") for v in fields.values())
        self.received += received
        if self.seen is not None and not redelivered:
            fields = filter_inbox(self.seen, [(stream, entry_id, fields)])[0][2]
        before = self.lines
        await super().take(stream, entry_id, fields, redelivered=redelivered)
        self.appended += self.lines - before


async def add_owner_filtered(frontier: Frontier, splitter: OwnerSplitter,
                             entries: list[Queued], *, now: int) -> tuple[int, int]:
    """add_canonical with the owner's filter: returns (appended here, sent to others).
    Which domains are ours follows the machine's slots, as in Frontier._add_owned."""
    machine = frontier.machine
    assert machine is not None
    batch = splitter.split(entries, now=now)
    refused = await frontier.append_owned(batch.ours, counts=batch.counts,
                                          offered=len(entries), now=now)
    if refused:
        raise RuntimeError(f"{len(refused)} domains refused: the slots moved during the bench")
    await machine.send(batch.theirs)
    return batch.appended, batch.sent


def _is_ours(machine: MachineState, ours: dict[str, bool], domain: str) -> bool:
    found = ours.get(domain)
    if found is None:
        ours[domain] = found = machine.slot(domain) in machine.mine
    return found


def owner_main(spec: OwnerSpec, conn: Connection) -> None:
    """Child entry point (module level, for `spawn`)."""
    asyncio.run(_owner(spec, conn))


async def _owner(spec: OwnerSpec, conn: Connection) -> None:
    redis = Redis.from_url(spec.redis_url)
    config = FrontierConfig(name=spec.crawl, seen_capacity=spec.capacity,
                            seen_error_rate=spec.error_rate, seen_backend="bitmap")
    spec.root.mkdir(parents=True, exist_ok=True)
    frontier = await Frontier(redis, spec.root / "frontier", config).open()
    seen = (OwnerSeenFilter(spec.root / "seen.bloom", spec.capacity, error_rate=spec.error_rate)
            if spec.seen == "owner" else None)
    try:
        await join_with_share(frontier, f"owner{spec.index}", owners=spec.owners, slots=spec.slots)
        conn.send("joined")
        if conn.recv() != "prepare":
            return
        ours: dict[str, bool] = {}
        batches, raw = build_batches(spec, frontier, ours)
        await warm_up(spec, frontier, seen, ours)
        gc.collect()
        gc.freeze()  # keep the collector off the million test URLs
        conn.send("ready")
        if conn.recv() != "run":
            return
        conn.send(await run_round(spec, frontier, seen, batches, raw, ours, conn))
    finally:
        if seen is not None:
            seen.close()
        frontier.close()
        await redis.aclose()


async def join_with_share(frontier: Frontier, name: str, *, owners: int, slots: int) -> None:
    """Join as machine `name` and heartbeat (giving slots away as the leader does) until
    this machine holds slots / owners of them."""
    keys = frontier.state.keys
    state = MachineState(frontier.redis, keys, machine=name, slots=slots,
                         prefixes=[keys.domain_prefix, frontier.config.host_gates])
    frontier.own_slots(state)
    loop = MachineLoop(frontier, frontier.files.root, lease_seconds=3600.0, leader=True)
    await loop.start()
    deadline = time.monotonic() + 60
    while len(state.mine) != slots // owners:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} holds {len(state.mine)} slots, not {slots // owners}")
        await asyncio.sleep(0.1)
        beat = await loop._beat()
        await loop._balance(beat)
    await state.ensure_groups(sorted(state.mine))


def build_batches(spec: OwnerSpec, frontier: Frontier, ours: dict[str, bool]
                  ) -> tuple[list[list[Queued]], list[list[tuple[str, int]]]]:
    """This owner's URLs, canonicalized: spec.urls of them, other_share in domains it does
    not own; in batches of spec.batch. Also the same batches as raw (URL, depth) pairs."""
    machine = frontier.machine
    assert machine is not None
    want_theirs = round(spec.urls * spec.other_share)
    want_mine = spec.urls - want_theirs
    mine: list[tuple[Queued, tuple[str, int]]] = []
    theirs: list[tuple[Queued, tuple[str, int]]] = []
    rounds = 0
    while len(mine) < want_mine or len(theirs) < want_theirs:
        links = [link for batch in make_batches(
            spec.urls * spec.owners, spec.domains, spec.batch, clustered=True,
            seed=spec.index * 100 + rounds, tag=f"o{spec.index}r{rounds}-") for link in batch]
        for found, link in zip(try_canonical_many(u for u, _ in links), links, strict=True):
            if found is None:
                raise RuntimeError(f"synthetic URL {link[0]!r} did not canonicalize")
            pair = ((found, link[1]), link)
            (mine if _is_ours(machine, ours, found[1]) else theirs).append(pair)
        rounds += 1
    mine, theirs = mine[:want_mine], theirs[:want_theirs]
    batches: list[list[Queued]] = []
    raw: list[list[tuple[str, int]]] = []
    taken_mine = taken_theirs = 0
    while taken_mine < len(mine) or taken_theirs < len(theirs):  # each batch in the same mix
        done = len(batches) + 1
        end_mine = min(len(mine), round(done * spec.batch * (1 - spec.other_share)))
        end_theirs = min(len(theirs), round(done * spec.batch * spec.other_share))
        pairs = mine[taken_mine:end_mine] + theirs[taken_theirs:end_theirs]
        taken_mine, taken_theirs = end_mine, end_theirs
        batches.append([entry for entry, _ in pairs])
        raw.append([link for _, link in pairs])
    return batches, raw


async def warm_up(spec: OwnerSpec, frontier: Frontier, seen: OwnerSeenFilter | None,
                  ours: dict[str, bool]) -> None:
    """One URL per domain this owner owns, through its add path (untimed): the frontier
    files and the domains' Redis hashes exist before the timed adds, as in a running crawl."""
    found = try_canonical_many(f"https://www.site{d}.example/" for d in range(spec.domains))
    machine = frontier.machine
    assert machine is not None
    entries: list[Queued] = [(f, 0) for f in found
                             if f is not None and _is_ours(machine, ours, f[1])]
    splitter = OwnerSplitter(machine, seen) if seen is not None else None
    for i in range(0, len(entries), spec.batch):
        if splitter is not None:
            await add_owner_filtered(frontier, splitter, entries[i:i + spec.batch],
                                     now=int(time.time()))
        else:
            await frontier.add_canonical(entries[i:i + spec.batch])


async def run_round(spec: OwnerSpec, frontier: Frontier, seen: OwnerSeenFilter | None,
                    batches: list[list[Queued]], raw: list[list[tuple[str, int]]],
                    ours: dict[str, bool], conn: Connection) -> OwnerRound:
    away_counts = [sum(1 for entry in batch if not ours[entry[0][1]]) for batch in batches]
    consumer = FilteringInbox(frontier, consumer=f"owner{spec.index}-0", seen=seen)
    assert frontier.machine is not None
    splitter = OwnerSplitter(frontier.machine, seen) if seen is not None else None
    stop = asyncio.Event()
    cpu, started = time.process_time(), time.perf_counter()
    consuming = asyncio.create_task(consume(consumer, stop)) if spec.owners > 1 else None
    appended = sent = 0
    feed = iter(range(len(batches)))
    now = int(time.time())

    async def adder() -> None:
        nonlocal appended, sent
        for i in feed:
            if splitter is not None:
                here, away = await add_owner_filtered(frontier, splitter, batches[i], now=now)
            else:
                if spec.canonicalize:
                    result = await frontier.add_urls(raw[i])
                else:
                    result = await frontier.add_canonical(batches[i], now=now)
                away = away_counts[i]
                here = result.added - away  # every URL is new (fresh crawl, unique URLs)
            appended += here
            sent += away

    await asyncio.gather(*(adder() for _ in range(spec.adders)))
    add_wall = time.perf_counter() - started
    conn.send(("added", sent))
    if conn.recv() != "drain":
        raise RuntimeError("expected drain")
    if consuming is not None:
        while await inbox_backlog(frontier):
            await asyncio.sleep(0.002)
        stop.set()
        await consuming
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    domains = sum(len({e[0][1] for e in b}) for b in batches) / max(len(batches), 1)
    return OwnerRound(sum(len(b) for b in batches), appended, sent, consumer.received,
                      consumer.appended, domains, add_wall, wall, cpu,
                      seen.flushes if seen is not None else 0)


async def consume(consumer: FilteringInbox, stop: asyncio.Event) -> None:
    while not stop.is_set():
        if not await consumer.poll():
            await asyncio.sleep(0.002)


async def inbox_backlog(frontier: Frontier) -> int:
    """Entries in this machine's slots' inboxes (taken entries are deleted once recorded)."""
    machine = frontier.machine
    assert machine is not None
    keys = frontier.state.keys
    async with frontier.redis.pipeline(transaction=False) as pipe:
        for slot in sorted(machine.mine):
            pipe.xlen(keys.inbox(slot))
        return sum(int(n) for n in await pipe.execute())


def start_owner(spec: OwnerSpec) -> tuple[BaseProcess, Connection]:
    context = multiprocessing.get_context("spawn")
    parent_end, child_end = context.Pipe()
    child = context.Process(target=owner_main, args=(spec, child_end), daemon=True)
    child.start()
    return child, parent_end
