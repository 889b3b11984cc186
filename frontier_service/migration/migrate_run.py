"""`migrate-from-postgres`: the three tables, in order, into a new crawl's hybrid frontier.

domain_metadata first (exclusions and next fetch times must be in place before a domain's
first URL makes it ready), then visited_urls (into the seen filter, so the frontier rows
already fetched are dropped as seen), then frontier. The crawl's id and epoch are set the
way a new crawl's are, so `frontier-service run` on the same data dir, Redis and crawl
name carries on with the migrated frontier.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from archive_pipelines.archive_error import ArchiveError
from frontier_service.fetch.redis_robots_store import RedisRobotsStore
from frontier_service.frontier.checkpoint import OffsetCheckpoint, checkpoint_dir
from frontier_service.frontier.folder_locks import live_sessions
from frontier_service.frontier.frontier import Frontier
from frontier_service.migration import migrate_checkpoint as mcp
from frontier_service.migration.migrate_frontier import (
    FrontierBatch,
    FrontierBatches,
    prepare_batch,
)
from frontier_service.migration.migrate_progress import MigrateProgress
from frontier_service.migration.migrate_tables import (
    DomainSettings,
    migrate_domains,
    migrate_visited,
    prepare_visited,
)
from frontier_service.migration.postgres_source import (
    DOMAINS,
    FRONTIER,
    TABLES,
    VISITED,
    PostgresSource,
    Row,
    TableSpec,
)
from frontier_service.recovery.epoch import EpochState, check_epoch, has_disk_state
from frontier_service.recovery.frontier_recovery import FrontierRecovery
from frontier_service.service.crawler_parts import open_frontier
from frontier_service.service.crawler_settings import CrawlerSettings

log = logging.getLogger(__name__)

T = TypeVar("T")
B = TypeVar("B")


class MigrationRefused(ArchiveError):
    """The target crawl cannot take the migration (it exists, or a crawler is running)."""


@dataclass(frozen=True, slots=True)
class MigrateOptions:
    batch_rows: int = 20_000
    batches_per_sync: int = 5  # frontier batches between two syncs of the files
    progress_s: float = 2.0


async def migrate(source: PostgresSource, settings: CrawlerSettings, *,
                  options: MigrateOptions = MigrateOptions()) -> mcp.MigrationCheckpoint:
    """Migrate (or resume migrating) the source into `settings`' crawl; returns the final
    checkpoint, whose counts say what was done."""
    home, name = settings.frontier_home, settings.crawl_name
    path = mcp.checkpoint_path(home, name)
    source.check_schema()
    progress = MigrateProgress(every_s=options.progress_s)
    totals = {t.name: source.row_count(t) for t in TABLES}
    settings = settings.with_changes(
        seen_capacity=max(settings.seen_capacity, 2 * sum(n for n, _ in totals.values())),
        visited_expected=max(settings.visited_expected, totals[VISITED.name][0]))
    lock = mcp.lock_migration(path)
    try:
        running = live_sessions(checkpoint_dir(home, name))
        if running:
            raise MigrationRefused(f"a crawler of crawl {name!r} is running (session "
                                   f"{running[0]}): stop it before migrating into it")
        async with open_frontier(settings) as (frontier, _):
            checkpoint = mcp.load(path)
            if checkpoint is None:
                await _require_new_crawl(frontier, settings)
                checkpoint = mcp.MigrationCheckpoint(name, source.where)
                mcp.save(path, checkpoint)
            elif checkpoint.source != source.where:
                log.warning("resuming a migration from %s with %s", checkpoint.source,
                            source.where)
            if checkpoint.finished:
                return checkpoint
            resumed = bool(checkpoint.tables)
            held = await FrontierRecovery(frontier, home).on_start(audit_whole=resumed)
            if resumed and held is not EpochState.MATCH:
                # Redis lost the crawl meanwhile: the rebuild from the files restored the
                # frontier, not the visited URLs, exclusions' schedule or robots: again
                log.warning("Redis lost the migrated state: migrating domains and visited "
                            "URLs again")
                for table in (DOMAINS, VISITED):
                    checkpoint.tables[table.name] = mcp.TableProgress()
            offsets = OffsetCheckpoint(checkpoint_dir(home, name), f"migrate-{uuid.uuid4().hex}")
            try:
                run = _Run(source, frontier, checkpoint, path=path, options=options,
                           progress=progress, totals=totals)
                await run.domains(offsets, settings.min_delay_s)
                await run.visited()
                await run.frontier_rows()
            finally:
                offsets.close()
            checkpoint.finished = True
            mcp.save(path, checkpoint)
            return checkpoint
    finally:
        lock.close()


async def _require_new_crawl(frontier: Frontier, settings: CrawlerSettings) -> None:
    state = await check_epoch(frontier.redis, frontier.state.keys, "")
    if state is not EpochState.EMPTY or has_disk_state(settings.frontier_home,
                                                        settings.crawl_name):
        raise MigrationRefused(
            f"crawl {settings.crawl_name!r} already has a frontier (in Redis or in "
            f"{settings.frontier_home}): migrate into a new --crawl-name")


class _Run:
    """One migration's pass over the tables, saving the checkpoint after every batch (the
    frontier's: after every window of batches, and before each batch of it)."""

    def __init__(self, source: PostgresSource, frontier: Frontier,
                 checkpoint: mcp.MigrationCheckpoint, *, path: Path, options: MigrateOptions,
                 progress: MigrateProgress, totals: dict[str, tuple[int, bool]]) -> None:
        self.source, self.frontier, self.checkpoint = source, frontier, checkpoint
        self.path, self.options, self.progress, self.totals = path, options, progress, totals

    async def save(self) -> None:
        data = self.checkpoint.to_json()  # here: the event loop may change it meanwhile
        await asyncio.to_thread(mcp.save_bytes, self.path, data)

    async def domains(self, offsets: OffsetCheckpoint, min_delay_s: float) -> None:
        robots = RedisRobotsStore(self.frontier.redis, self.frontier.config.name)
        settings = DomainSettings(now=time.time(), min_delay_s=min_delay_s)
        async for rows in self._table(DOMAINS, lambda rows: rows):
            await migrate_domains(rows, frontier=self.frontier, robots=robots, offsets=offsets,
                                  settings=settings, checkpoint=self.checkpoint)
            await self._done(DOMAINS, through=str(rows[-1][0]), rows=len(rows))

    async def visited(self) -> None:
        async for batch in self._table(VISITED, prepare_visited):
            await migrate_visited(batch, frontier=self.frontier, checkpoint=self.checkpoint)
            await self._done(VISITED, through=batch.through, rows=batch.rows)

    async def frontier_rows(self) -> None:
        if self.checkpoint.table(FRONTIER.name).done:
            return
        batches = FrontierBatches(self.frontier, self.checkpoint, save=self.save,
                                  batches_per_sync=self.options.batches_per_sync)
        async for batch in self._table(FRONTIER, prepare_batch, redo=self._frontier_redo):
            await batches.migrate(batch)
            self.progress.advance(batch.rows)
        await batches.sync()
        await self._finished(FRONTIER)

    async def _done(self, table: TableSpec, *, through: str, rows: int) -> None:
        state = self.checkpoint.table(table.name)
        state.after = through
        state.rows += rows
        await self.save()
        self.progress.advance(rows)

    async def _finished(self, table: TableSpec) -> None:
        self.checkpoint.table(table.name).done = True
        await self.save()
        self.progress.finish()

    async def _table(self, table: TableSpec, prepare: Callable[[list[Row]], T], *,
                     redo: Callable[[], Iterator[T]] | None = None) -> AsyncIterator[T]:
        """The table's batches not done yet, each `prepare(rows)` in the thread that read
        it (after `redo`'s); domains and visited URLs are marked done at the end."""
        state = self.checkpoint.table(table.name)
        if state.done:
            return
        total, exact = self.totals[table.name]
        self.progress.start(table.name, total=total, exact=exact, done=state.rows)
        after = state.after
        pending = self.checkpoint.pending if table is FRONTIER else None
        if pending is not None:
            after = pending.through

        def batches() -> Iterator[T]:
            if redo is not None:
                yield from redo()
            for rows in self.source.batches(table, after=after,
                                            batch_rows=self.options.batch_rows):
                yield prepare(rows)

        async with _prefetched(batches()) as prefetched:
            async for batch in prefetched:
                yield batch
        if table is not FRONTIER:
            await self._finished(table)

    def _frontier_redo(self) -> Iterator[FrontierBatch]:
        """The window a kill interrupted, read again whole (maybe no rows: gone since)."""
        pending = self.checkpoint.pending
        if pending is not None:
            rows = self.source.rows_between(FRONTIER, after=pending.after,
                                            through=pending.through)
            yield prepare_batch(rows, through=pending.through, redo=pending)


@contextlib.asynccontextmanager
async def _prefetched(batches: Iterator[B]) -> AsyncIterator[AsyncIterator[B]]:
    """The batches, the next one read from PostgreSQL (in a thread) while this one is written."""
    ahead: asyncio.Future[B | None] | None = None

    async def each() -> AsyncIterator[B]:
        nonlocal ahead
        ahead = asyncio.ensure_future(asyncio.to_thread(next, batches, None))
        while True:
            rows = await ahead
            if rows is None:
                ahead = None
                return
            ahead = asyncio.ensure_future(asyncio.to_thread(next, batches, None))
            yield rows

    try:
        yield each()
    finally:
        if ahead is not None:
            with contextlib.suppress(Exception):
                await ahead
        close = getattr(batches, "close", None)
        if close is not None:
            close()
