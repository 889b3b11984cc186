"""Startup and shutdown of the crawler's parts: Redis, frontier, fetcher, robots, archive,
and the browser pool when a domain of the crawl may be loaded in Chromium.

`open_parts(settings)` is the startup hook (arq's `on_startup`): it checks the data
dir, connects (or starts the embedded Redis), opens the frontier and the fetcher, and
builds the archiver on the primary blob store; leaving the block closes them in reverse.
With an S3 primary the bodies go to the bucket (one conditional PUT each: a crawled body is
most likely new) and so do the closed segments; segments an earlier run could not upload
are uploaded at start (captures/segment_spool.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from playwright.async_api import async_playwright
from redis.asyncio import Redis
from redis.exceptions import RedisError

from archive_pipelines.archive_error import (
    DataDirError,
    SettingsError,
    disk_full_message,
    is_disk_full,
)
from archive_pipelines.blobstore import BlobStore, LocalBlobStore, open_store
from archive_pipelines.captures.segment_source import SegmentSource, segment_source
from archive_pipelines.captures.segment_spool import upload_spooled_segments
from archive_pipelines.datadir import require_data_dir
from archive_pipelines.settings import StoreSettings
from frontier_service.archiving.archiver import Archiver
from frontier_service.archiving.page_journal import JournaledIndexWriter, recover_journals
from frontier_service.archiving.validators import ValidatorStore
from frontier_service.browser import BrowserPool, ChromiumMissing, HeaderHasher, header_secret
from frontier_service.fetch.fetch_settings import FetchSettings
from frontier_service.fetch.fetcher import Fetcher
from frontier_service.fetch.redis_robots_store import RedisRobotsStore
from frontier_service.fetch.robots import RobotsCache
from frontier_service.frontier.checkpoint import OffsetCheckpoint, checkpoint_dir
from frontier_service.frontier.frontier import Frontier, FrontierConfig
from frontier_service.frontier.machine_state import MachineState, SlotsMismatch
from frontier_service.frontier.redis_conn import open_redis
from frontier_service.frontier.slots import DEFAULT_SLOTS
from frontier_service.machines.machine_loop import MachineLoop
from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.link_journal import LinkJournal, replay_link_journals
from frontier_service.recovery.frontier_recovery import FrontierRecovery
from frontier_service.recovery.redis_memory import memory_guard
from frontier_service.scope.address_policy import AddressPolicy
from frontier_service.scope.resolver import CrawlResolver
from frontier_service.service.crawler_settings import CrawlerSettings

log = logging.getLogger(__name__)

DEFAULT_STORE = StoreSettings(name="primary", kind="local", path="cas", codec="raw")


@dataclass
class CrawlerParts:
    settings: CrawlerSettings
    redis: Redis
    redis_url: str
    frontier: Frontier
    fetcher: Fetcher
    robots: RobotsCache
    store: BlobStore
    archiver: Archiver
    index_writer: JournaledIndexWriter
    link_journal: LinkJournal
    owner: str  # lease owner id of this process
    session_id: str
    offsets: OffsetCheckpoint  # this session's read offsets on disk
    recovery: FrontierRecovery
    validators: ValidatorStore | None = None  # conditional requests (`validators_key`)
    browser_pool: BrowserPool | None = None  # started when some domain may use the browser
    header_hasher: HeaderHasher | None = None  # keys the browser records' Cookie hashes
    segments: SegmentSource | None = None  # where closed segments go (an S3 primary's bucket)
    machines: MachineLoop | None = None  # several machines: this one's slots and inboxes


def check_data_dir(data_dir: Path, frontier_home: Path | None = None) -> Path:
    """The data dir (and `frontiers/` in the crawl's frontier home, by default the data dir),
    created if missing; DataDirError (one line) if it is not writable."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        (frontier_home or data_dir).joinpath("frontiers").mkdir(parents=True, exist_ok=True)
        probe = data_dir / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise DataDirError(f"data dir {data_dir} is not writable: {reason}") from None
    return data_dir


def frontier_config(settings: CrawlerSettings) -> FrontierConfig:
    return FrontierConfig(name=settings.crawl_name, lease_seconds=settings.lease_seconds,
                          seen_capacity=settings.seen_capacity,
                          visited_expected=settings.visited_expected,
                          shard=settings.shard, shards=settings.shards,
                          host_gates=settings.host_gates,
                          max_open_files=settings.max_open_files)


def fetch_settings(settings: CrawlerSettings) -> FetchSettings:
    return FetchSettings(**{
        "user_agent": settings.user_agent,
        "max_body_bytes": settings.max_body_bytes,
        # Workers bound the requests in flight; the pool keeps per_host_concurrency
        # keep-alive connections per host (limit_per_host), so no total limit: a cap below
        # the host count would close and reopen connections all the time.
        "connection_limit": 0,
        "limit_per_host": settings.per_host_concurrency,
        "max_idle_connections": settings.max_idle_connections,
        **settings.fetch_overrides,
    })


def require_crawl_data(settings: CrawlerSettings) -> None:
    """For read-only commands (`stats`): DataDirError unless the data dir exists and, with
    the embedded Redis, that Redis has a folder there (no crawl ran otherwise); creates
    nothing."""
    require_data_dir(settings.data_dir)
    workdir = settings.data_dir / "redis"
    if settings.embedded_redis and not workdir.is_dir():
        raise DataDirError(f"no crawl has run in data dir {settings.data_dir} ({workdir}, the "
                           "embedded Redis, does not exist): nothing to show")


@contextlib.asynccontextmanager
async def open_frontier(settings: CrawlerSettings, *, create: bool = True,
                        recover: bool = False) -> AsyncIterator[tuple[Frontier, str]]:
    """Redis + the frontier only (for `seed` and `stats`); yields (frontier, redis url).

    `create=False` (read-only commands): a missing data dir is an error, not made.
    `recover`: first make Redis hold the crawl its data dir has (recovery/frontier_recovery.py).
    A command that writes is refused on a Redis that would evict the crawl
    (recovery/redis_memory.py)."""
    if create:
        check_data_dir(settings.data_dir, settings.frontier_home)
    else:
        require_crawl_data(settings)
    async with (open_redis(settings.redis_url, settings.data_dir) as (redis, url),
                memory_guard(redis, url, settings.crawl_name, writing=create)):
        frontier = await Frontier(redis, settings.frontier_home, frontier_config(settings)).open()
        try:
            await check_machines(frontier, settings, writing=create)
            if recover:
                await FrontierRecovery(frontier, settings.frontier_home).on_start()
            yield frontier, url
        finally:
            try:  # the urls_offered count of the last all-duplicate batches
                await frontier.flush_offered()
            except (OSError, RedisError) as exc:
                log.warning("urls_offered not counted at shutdown: %s", exc)
            frontier.close()


async def recover_crashed_runs(frontier: Frontier, settings: CrawlerSettings) -> None:
    """Queue the links that dead sessions of this crawl journaled (under its frontier root),
    and write the page records that any dead session of the data dir journaled."""
    await replay_link_journals(frontier, settings.frontier_home)
    for segment in await asyncio.to_thread(recover_journals, settings.data_dir):
        log.warning("recovered %d page-index records of a crashed run into %s",
                    segment.records, segment.path)


def _close_offsets(offsets: OffsetCheckpoint) -> None:
    """The session's last offset checkpoint. A full disk keeps the one before: a Redis
    that loses the crawl then repeats a few more fetches, nothing is lost."""
    try:
        offsets.close()
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        log.warning("the last offset checkpoint was not written (%s); the one before stands",
                    disk_full_message(exc))


@contextlib.asynccontextmanager
async def open_parts(settings: CrawlerSettings,
                          store_settings: StoreSettings | None = None,
                          metrics: CrawlMetrics | None = None) -> AsyncIterator[CrawlerParts]:
    """Everything a crawl needs, started; closed again (in reverse) on exit. `metrics`
    counts what recovery did (Redis rebuilds, repairs)."""
    async with contextlib.AsyncExitStack() as stack:
        frontier, url = await stack.enter_async_context(open_frontier(settings))
        resolver = CrawlResolver(settings.host_map, policy=AddressPolicy(settings.allowed_networks))
        fetcher = await stack.enter_async_context(Fetcher(fetch_settings(settings), resolver=resolver))
        robots = RobotsCache(fetcher, RedisRobotsStore(frontier.redis, settings.crawl_name),
                             unreachable_retry_s=settings.robots_unreachable_retry_s)
        store = crawl_store(store_settings or DEFAULT_STORE, settings.data_dir)
        # Bodies skip their own fsyncs; the segment closer syncs them (one syncfs) before the
        # records that point at them are written (an S3 put is durable when acknowledged).
        stack.enter_context(store.deferred_sync())
        segments = segment_source(store, settings.data_dir)
        executor = stack.enter_context(ThreadPoolExecutor(16, thread_name_prefix="archive"))
        session_id = str(uuid.uuid4())
        offsets = OffsetCheckpoint(checkpoint_dir(settings.frontier_home, settings.crawl_name),
                                   session_id)
        stack.callback(_close_offsets, offsets)
        recovery = FrontierRecovery(frontier, settings.frontier_home, offsets, metrics=metrics)
        if frontier.machine is not None and frontier.machine.machine == "-":
            raise SettingsError(f"crawl {settings.crawl_name!r} is run by several machines: "
                                "give this one a name with --machine NAME")
        machines = await join_machines(frontier, settings) if settings.machine else None
        # Before anything is queued or claimed: a supervisor did the whole audit already.
        await recovery.on_start(audit_whole=settings.recover_on_start)
        if machines is not None:
            machines.known_offset = recovery.known_offset  # (its checkpoints are loaded now)
            machines.machine.guard_epoch()
            if machines.leader:
                await machines.send_strays()
        if settings.recover_on_start:
            await recover_crashed_runs(frontier, settings)
        await asyncio.to_thread(upload_spooled_segments, segments, settings.data_dir)
        index_writer = JournaledIndexWriter(settings.data_dir, session_id)
        link_journal = LinkJournal(settings.frontier_home, session_id)
        archiver = Archiver(store, index_writer,
                            segment_pages=settings.segment_pages,
                            segment_seconds=settings.segment_seconds, executor=executor)
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        validators = (ValidatorStore(frontier.redis, settings.validators_key)
                      if settings.validators_key else None)
        pool = (await stack.enter_async_context(open_browser_pool(settings))
                if settings.uses_browser else None)
        hasher = HeaderHasher(header_secret(settings.data_dir)) if pool is not None else None
        yield CrawlerParts(settings, frontier.redis, url, frontier, fetcher, robots, store,
                           archiver, index_writer, link_journal, owner, session_id, offsets,
                           recovery, validators, browser_pool=pool, header_hasher=hasher,
                           segments=segments, machines=machines)


async def check_machines(frontier: Frontier, settings: CrawlerSettings, *, writing: bool) -> None:
    """A crawl several machines run: what `seed`, a supervisor or serve queues goes to the
    owners' inboxes (as a machine that owns no slot; a crawl process then joins with
    join_machines). Before its first machine ran, they append here: that machine adopts the
    domains (machine_loop.py)."""
    keys = frontier.state.keys
    slots = await frontier.redis.get(keys.slot_count)
    if slots is None or not writing:
        return
    frontier.own_slots(MachineState(frontier.redis, keys, machine=settings.machine or "-",
                                    slots=int(slots),
                                    prefixes=[keys.domain_prefix, settings.host_gates]))


async def join_machines(frontier: Frontier, settings: CrawlerSettings) -> MachineLoop:
    """Several machines: this process crawls only the domains of its machine's slots (the
    first process of the machine leads: see machines/machine_loop.py)."""
    keys = frontier.state.keys
    fixed = await frontier.redis.get(keys.slot_count)
    slots = settings.slots or (int(fixed) if fixed is not None else DEFAULT_SLOTS)
    state = MachineState(frontier.redis, keys, machine=settings.machine, slots=slots,
                         prefixes=[keys.domain_prefix, settings.host_gates])
    frontier.own_slots(state)
    loop = MachineLoop(frontier, settings.frontier_home, lease_seconds=settings.machine_lease_s,
                       leader=settings.shard == 0)
    try:
        await loop.start()
    except SlotsMismatch as exc:
        raise SettingsError(f"--slots {slots}: {exc}") from None
    return loop


def crawl_store(store_settings: StoreSettings, data_dir: Path) -> BlobStore:
    """The primary store as the crawler uses it: an S3 one puts each body with one
    conditional PUT (`look_before_put=False`), not a HEAD then a PUT: the crawler asks the
    store only about bodies it just fetched, most of them new."""
    store = open_store(store_settings, data_dir)
    if not isinstance(store, LocalBlobStore) and hasattr(store, "look_before_put"):
        store.look_before_put = False
    return store


@contextlib.asynccontextmanager
async def open_browser_pool(settings: CrawlerSettings) -> AsyncIterator[BrowserPool]:
    """Playwright and a started BrowserPool of `browser_contexts` contexts; closed (its loads
    drained, at most `drain_timeout_s`) on exit. SettingsError (one line) without Chromium."""
    async with async_playwright() as playwright:
        pool = BrowserPool(playwright, contexts=settings.browser_contexts,
                           drain_timeout_s=settings.drain_timeout_s)
        try:
            await pool.start()
        except ChromiumMissing as exc:
            raise SettingsError(str(exc)) from None
        try:
            yield pool
        finally:
            if not await pool.close():
                log.warning("browser page loads still running after %g s were cut off",
                            settings.drain_timeout_s)
