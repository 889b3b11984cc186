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
from frontier_service.migration.migrate_progress import MigrateProgress
from frontier_service.migration.migrate_tables import (
    DomainSettings,
    FrontierBatches,
    migrate_domains,
    migrate_visited,
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
B = TypeVar("B")  # a re-done batch is read as one batch, however many rows


class MigrationRefused(ArchiveError):
    """The target crawl cannot take the migration (it exists, or a crawler is running)."""


@dataclass(frozen=True, slots=True)
class MigrateOptions:
    batch_rows: int = 20_000
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
    """One migration's pass over the tables, saving the checkpoint after every batch."""

    def __init__(self, source: PostgresSource, frontier: Frontier,
                 checkpoint: mcp.MigrationCheckpoint, *, path: Path, options: MigrateOptions,
                 progress: MigrateProgress, totals: dict[str, tuple[int, bool]]) -> None:
        self.source, self.frontier, self.checkpoint = source, frontier, checkpoint
        self.path, self.options, self.progress, self.totals = path, options, progress, totals

    def save(self) -> None:
        mcp.save(self.path, self.checkpoint)

    async def domains(self, offsets: OffsetCheckpoint, min_delay_s: float) -> None:
        robots = RedisRobotsStore(self.frontier.redis, self.frontier.config.name)
        settings = DomainSettings(now=time.time(), min_delay_s=min_delay_s)
        async for rows, _ in self._table(DOMAINS):
            await migrate_domains(rows, frontier=self.frontier, robots=robots, offsets=offsets,
                                  settings=settings, checkpoint=self.checkpoint)
            self._done(DOMAINS, rows)

    async def visited(self) -> None:
        async for rows, _ in self._table(VISITED):
            await migrate_visited(rows, frontier=self.frontier, checkpoint=self.checkpoint)
            self._done(VISITED, rows)

    async def frontier_rows(self) -> None:
        batches = FrontierBatches(self.frontier, self.checkpoint)
        async for rows, prepared in self._table(FRONTIER, prepare=batches.prepare):
            assert prepared is not None
            after = self.checkpoint.table(FRONTIER.name).after
            await batches.migrate(prepared, after=after, save=self.save)
            self._done(FRONTIER, rows)

    def _done(self, table: TableSpec, rows: list[Row]) -> None:
        state = self.checkpoint.table(table.name)
        state.after = str(rows[-1][0])
        state.rows += len(rows)
        self.save()
        self.progress.advance(len(rows))

    async def _table(self, table: TableSpec, *, prepare: Callable[[list[Row]], T] | None = None
                     ) -> AsyncIterator[tuple[list[Row], T | None]]:
        """The table's batches not done yet, each with `prepare(rows)` run in the thread
        that read it."""
        state = self.checkpoint.table(table.name)
        if state.done:
            return
        total, exact = self.totals[table.name]
        self.progress.start(table.name, total=total, exact=exact, done=state.rows)
        batches = ((rows, prepare(rows) if prepare else None) for rows in self._batches(table))
        async with _prefetched(batches) as prefetched:
            async for rows, prepared in prefetched:
                yield rows, prepared
        state.done = True
        self.save()
        self.progress.finish()

    def _batches(self, table: TableSpec) -> Iterator[list[Row]]:
        state = self.checkpoint.table(table.name)
        pending = self.checkpoint.pending if table is FRONTIER else None
        after = state.after
        if pending is not None:  # first the batch a kill interrupted, whole, as it was
            rows = self.source.rows_between(table, after=pending.after, through=pending.through)
            if rows:
                yield rows
            else:  # its rows are gone from the table; `run`'s audit records any lines left
                self.checkpoint.pending = None
            after = pending.through
        yield from self.source.batches(table, after=after, batch_rows=self.options.batch_rows)


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
