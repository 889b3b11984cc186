"""Redis kept in step with the disk: checked before anything is claimed, rebuilt when it
lost the crawl's state, audited before the crawl may end "exhausted".

The files hold the truth: every URL ever queued (per-domain frontier files) and how far
each domain was fetched (the sessions' offset checkpoints). Redis is a fast index of them.
At start an empty Redis with a crawl on disk, or one that lost part of its state, is
rebuilt; another crawl's Redis is refused. During the run every frontier script refuses
once the epoch key is gone (FrontierLost): the first process to notice rebuilds, after
writing its own checkpoint, so only URLs fetched since another process's last checkpoint
(`checkpoint_seconds`) and those in flight are fetched again.

Rebuilding is bounded: a Redis that evicts the crawl's keys or is out of memory would lose
it again at once, and one that loses it more than REBUILDS_PER_WINDOW times a minute, or
where a rebuild fails twice running, is not holding it either. Each sets `failure`, which
the run stops on (redis_memory.py).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from archive_pipelines.archive_error import ArchiveError
from frontier_service.frontier.checkpoint import (
    DomainCheckpoint,
    OffsetCheckpoint,
    checkpoint_dir,
    load_checkpoints,
    merge_dead_sessions,
)
from frontier_service.frontier.folder_locks import lock_rebuild
from frontier_service.frontier.frontier import Frontier
from frontier_service.metrics import CrawlMetrics
from frontier_service.recovery.audit import AuditReport, EpochChanged, audit
from frontier_service.recovery.epoch import (
    EpochState,
    check_epoch,
    ensure_crawl_id,
    has_disk_state,
    read_crawl_id,
    set_epoch,
)
from frontier_service.recovery.redis_memory import NOTHING_LOST, RedisCannotHoldCrawl, RedisMemoryWatch
from frontier_service.recovery.redis_rebuild import RebuildReport, rebuild_redis

log = logging.getLogger(__name__)


class ForeignRedis(ArchiveError):
    """Redis holds another crawl under this crawl's name."""


REBUILDS_PER_WINDOW = 3
REBUILD_WINDOW_S = 60.0
FAILED_REBUILDS = 2  # in a row, Redis answering: it cannot hold the crawl


class FrontierRecovery:
    """Checks and repairs one crawl's Redis against the files under its frontier root `root`
    (CrawlerSettings.frontier_home: the data dir unless the crawl has a root of its own)."""

    def __init__(self, frontier: Frontier, root: Path,
                 offsets: OffsetCheckpoint | None = None,
                 *, metrics: CrawlMetrics | None = None) -> None:
        self.frontier = frontier
        self.root = root
        self.offsets = offsets  # this process's checkpoint: written before a rebuild
        self.metrics = metrics or CrawlMetrics()  # redis_rebuilds, frontier_repairs
        self.last_rebuild: RebuildReport | None = None
        self.crawl_id = ""
        self.baseline: dict[str, DomainCheckpoint] = {}  # all sessions' offsets at start
        self._rebuilding = asyncio.Lock()
        self.memory = RedisMemoryWatch(frontier.redis)
        self.failure = ""  # why Redis cannot hold the crawl: the run stops on it
        self._lost_at: collections.deque[float] = collections.deque()
        self._failed_rebuilds = 0

    @property
    def name(self) -> str:
        return self.frontier.config.name

    @property
    def checkpoints_dir(self) -> Path:
        return checkpoint_dir(self.root, self.name)

    async def on_start(self, *, audit_whole: bool = True) -> EpochState:
        """Before the first claim: adopt, start, rebuild or refuse this Redis; then every
        frontier script refuses once the crawl's state is gone."""
        await self.memory.start()
        # Several machines: one crawl id, in Redis; a machine that joins takes it as its own.
        joining = None
        if self.frontier.machine is not None:
            joining = await self._crawl_id_to_join()
        self.crawl_id = await asyncio.to_thread(ensure_crawl_id, self.root, self.name,
                                                joining=joining)
        await asyncio.to_thread(merge_dead_sessions, self.checkpoints_dir)
        state = await check_epoch(self.frontier.redis, self.frontier.state.keys, self.crawl_id)
        if state is EpochState.FOREIGN:
            raise ForeignRedis(
                f"Redis holds another crawl named {self.name!r} (its epoch is not the crawl id "
                f"in {self.checkpoints_dir}): use another --crawl-name, another Redis, or "
                "`frontier-service rebuild-redis --yes` to replace it with this data dir's crawl")
        if state is EpochState.EMPTY and not await asyncio.to_thread(
                has_disk_state, self.root, self.name):
            await set_epoch(self.frontier.redis, self.frontier.state.keys, self.crawl_id)
        elif state is not EpochState.MATCH:
            log.warning("Redis holds %s of crawl %r that its data dir has: rebuilding it from "
                        "the frontier files and checkpoints",
                        "none" if state is EpochState.EMPTY else "only part", self.name)
            await self._rebuild()
        elif audit_whole:
            await self.audit()  # a Redis restored from an older copy lags behind the files
        self.frontier.state.guard_epoch()
        self.baseline = await asyncio.to_thread(load_checkpoints, self.checkpoints_dir)
        return state

    async def _crawl_id_to_join(self) -> str | None:
        """Several machines: the crawl id in Redis. Machines that start a crawl at the same
        time agree on one: the first to set it (SET NX) wins, the others join it; before,
        each made its own id and all but one found a "foreign" crawl in Redis."""
        redis, keys = self.frontier.redis, self.frontier.state.keys
        value = await redis.get(keys.epoch)
        new = await asyncio.to_thread(read_crawl_id, self.root, self.name) is None
        # A new machine does not wait for the crawl's state to look empty: a machine that
        # started a moment before has its slots and seeds in Redis already, and its epoch
        # only follows its own on_start; whichever sets it first names the crawl.
        if value is None and new:
            await redis.set(keys.epoch, str(uuid.uuid4()), nx=True)
            value = await redis.get(keys.epoch)
        return value.decode() if isinstance(value, bytes) else value

    def known_offset(self, domain: str) -> int:
        """How far the domain is known to be fetched, by the checkpoints (never more than
        the truth: a read offset in Redis below this was lost, e.g. an evicted key)."""
        base = self.baseline.get(domain)
        mine = self.offsets.offset(domain) if self.offsets is not None else 0
        return max(base.offset if base is not None else 0, mine)

    async def rebuild_lost(self) -> None:
        """A script found the crawl's state gone mid-run: rebuild it (or wait for the
        process that already is), then carry on; RedisCannotHoldCrawl (and `failure` set)
        if Redis evicts or is out of memory, or rebuilding keeps failing."""
        async with self._rebuilding:
            if self.failure:
                raise RedisCannotHoldCrawl(self.failure)
            state = await check_epoch(self.frontier.redis, self.frontier.state.keys,
                                      self.crawl_id)
            if state is EpochState.MATCH:
                return  # rebuilt meanwhile (by us or another process)
            if state is EpochState.FOREIGN:
                raise ForeignRedis(f"Redis now holds another crawl named {self.name!r}: "
                                   "stopping rather than mixing two crawls")
            cause = await self.memory.problem()
            if cause is not None:  # a rebuild would be evicted or refused too
                self._fail(cause)
            self._count_loss()
            log.warning("Redis lost crawl %r's state (wiped, restarted empty or replaced): "
                        "rebuilding it from disk; URLs fetched since the last checkpoint "
                        "may be fetched again", self.name)
            try:
                await self._rebuild()
            except (RedisConnectionError, RedisTimeoutError):
                raise  # Redis is away: the crawl waits for it, as for any outage
            except RedisError as exc:  # Redis answered, and the rebuild still failed
                self._failed_rebuilds += 1
                cause = await self.memory.problem(exc)
                if cause is None and self._failed_rebuilds >= FAILED_REBUILDS:
                    cause = (f"Redis lost the state of crawl {self.name!r} again while it was "
                             f"rebuilt from disk, {self._failed_rebuilds} times running "
                             f"({exc}; {self._settings()}); {NOTHING_LOST}")
                if cause is not None:
                    self._fail(cause)
                raise
            self._failed_rebuilds = 0

    def _count_loss(self) -> None:
        """Another loss of the crawl's state: too many in a minute and the run stops."""
        now = time.monotonic()
        while self._lost_at and now - self._lost_at[0] > REBUILD_WINDOW_S:
            self._lost_at.popleft()
        if len(self._lost_at) >= REBUILDS_PER_WINDOW:
            self._fail(f"Redis lost the state of crawl {self.name!r} {len(self._lost_at) + 1} times "
                       f"in {REBUILD_WINDOW_S:g} s ({self._settings()}): something keeps "
                       "wiping it (FLUSHALL, restarts without persistence, evictions); "
                       f"stopping rather than rebuilding it for ever; {NOTHING_LOST}")
        self._lost_at.append(now)

    def _settings(self) -> str:
        baseline = self.memory.baseline
        return baseline.settings if baseline is not None else "memory settings unknown"

    def _fail(self, reason: str) -> None:
        if not self.failure:
            self.failure = reason
            log.error("%s", reason)
        raise RedisCannotHoldCrawl(self.failure)

    async def watch(self, stopping: asyncio.Event, on_failure: Callable[[str], object], *,
                    every_s: float = 1.0) -> None:
        """Until `stopping`: every `every_s`, `on_failure(reason)` once Redis cannot hold
        the crawl (a rebuild would not last)."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), every_s)
            # Once more when stopped for another reason (another process's failure): the
            # drain then knows Redis cannot take its final writes.
            problem = await self.problem()
            if problem:
                on_failure(problem)
            if stopping.is_set():
                return

    async def problem(self) -> str | None:
        """Why the run must stop for Redis's sake (evictions, out of memory, repeated
        losses), or None."""
        if not self.failure:
            cause = await self.memory.problem()
            if cause is not None:
                self.failure = cause
                log.error("%s", cause)
        return self.failure or None

    async def _rebuild(self) -> None:
        """Bring back a Redis that lost the crawl's state: an empty one is rebuilt from disk;
        one that kept part of it (evicted keys, a Redis from before epochs) keeps what it
        has and is repaired by an audit, so read offsets ahead of the checkpoints stay."""
        if self.offsets is not None:
            await asyncio.to_thread(self.offsets.write)  # our latest offsets count too
        lock = await asyncio.to_thread(lock_rebuild, self.checkpoints_dir)
        try:
            state = await check_epoch(self.frontier.redis, self.frontier.state.keys,
                                      self.crawl_id)
            if state is EpochState.MATCH:
                return  # another process finished first
            if state is EpochState.FOREIGN:
                raise ForeignRedis(f"Redis now holds another crawl named {self.name!r}")
            await asyncio.to_thread(merge_dead_sessions, self.checkpoints_dir)
            checkpoints = await asyncio.to_thread(load_checkpoints, self.checkpoints_dir)
            if state is EpochState.EMPTY:
                report = await rebuild_redis(self.frontier, self.root, checkpoints,
                                             crawl_id=self.crawl_id)
                self.last_rebuild = report
                log.warning("Redis rebuilt from disk in %.1f s: %d domains (%d with URLs to "
                            "fetch), %d URLs", report.seconds, report.domains, report.ready,
                            report.urls)
            else:
                repaired = await audit(self.frontier, self.root, checkpoints)
                await set_epoch(self.frontier.redis, self.frontier.state.keys, self.crawl_id)
                self.metrics.frontier_repairs += repaired.repaired
                log.warning("Redis had part of the crawl's state: %d domains repaired from "
                            "disk in %.1f s (%d recreated)", repaired.repaired,
                            repaired.seconds, repaired.missing)
        finally:
            lock.close()
        await self.frontier.seen.open()  # our filter object adopts the rebuilt layout
        self.metrics.redis_rebuilds += 1

    async def audit(self) -> AuditReport:
        """Check every domain against its file and checkpoint; repair what Redis lost."""
        checkpoints = await asyncio.to_thread(load_checkpoints, self.checkpoints_dir)
        try:
            report = await audit(self.frontier, self.root, checkpoints,
                                 crawl_id=self.crawl_id or None)
        except EpochChanged:
            await self.rebuild_lost()
            return await self.audit()
        if report.repaired:
            self.metrics.frontier_repairs += report.repaired
            log.warning("Redis had lost part of crawl %r's state; repaired from disk: %d "
                        "domains missing, %d sizes, %d read offsets, %d exclusions, %d requeued",
                        self.name, report.missing, report.size_repaired, report.offset_repaired,
                        report.excluded_repaired, report.requeued)
        return report

    async def truly_exhausted(self) -> bool:
        """Before the crawl ends "exhausted": no domain's file holds URLs past its read
        offset (after repairing what Redis lost)."""
        report = await self.audit()
        if report.unfetched_domains:
            log.warning("the frontier looked empty, but %d domains' files hold unfetched URLs: "
                        "crawling on", report.unfetched_domains)
            return False
        return not report.repaired
