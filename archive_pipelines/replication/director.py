"""The archival director: find under-replicated blobs, cut them into batches.

One tick scans a bounded window of blob ids from a cursor with one indexed query, so it
costs the same whatever the catalog's size; successive ticks walk the whole catalog and
wrap around to the start.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from archive_pipelines.catalog import Catalog, NeedyPage, retry_on_connection_loss, utcnow
from archive_pipelines.replication.report import BatchReport
from archive_pipelines.replication.setup import ReplicationSetup
from archive_pipelines.replication.stores import ReplicaSet
from archive_pipelines.replication.summary import RunSummary
from archive_pipelines.replication.worker import archive_batch

DEFAULT_SCAN_LIMIT = 100_000  # blob ids per tick: ~0.2 s on PostgreSQL at 1M blobs


@dataclass(frozen=True)
class DirectorTick:
    """What one director tick decided."""

    batches: list[list[str]]  # sha256s, each list one worker run
    next_cursor: int  # blob id to resume after; 0 once the scan wrapped around
    scanned: int  # blob ids the tick looked at
    wrapped: bool = False  # this tick reached the end of the catalog

    @property
    def blobs(self) -> int:
        return sum(len(batch) for batch in self.batches)


def chunk(items: Sequence[str], size: int) -> list[list[str]]:
    """Consecutive batches of at most `size` items."""
    if size < 1:
        raise ValueError("batch size must be >= 1")
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def next_cursor_after(page: NeedyPage, cursor: int) -> tuple[int, bool]:
    """(cursor for the next tick, whether the scan wrapped) after scanning `page`.

    A full page resumes after its last blob; a page that scanned to the end of the catalog
    starts over at 0; otherwise the next tick continues after the scanned window.
    """
    if page.reached_end:
        return 0, True
    if page.scanned_to is None:
        return cursor, False
    return page.scanned_to, False


def plan_batches(catalog: Catalog, replica_set: ReplicaSet, *, retention: int,
                 max_age: timedelta, batch_size: int, cursor: int = 0, max_batches: int = 1,
                 scan_limit: int = DEFAULT_SCAN_LIMIT, now: datetime | None = None
                 ) -> DirectorTick:
    """Batches of under-replicated blobs after `cursor`, at most `max_batches` of them.

    A blob is under-replicated when its present copies, plus ongoing copies younger than
    `max_age`, number fewer than `retention` across the configured stores.
    """
    if retention < 1 or max_batches < 1 or scan_limit < 1:
        raise ValueError("retention, max_batches and scan_limit must be >= 1")
    fresh_since = (now or utcnow()) - max_age
    with catalog.reading() as tx:
        page = tx.copies.find_needy_blobs(store_ids=replica_set.store_ids, retention=retention,
                                fresh_since=fresh_since, cursor=cursor, scan_limit=scan_limit,
                                limit=batch_size * max_batches)
        scanned = 0 if page.scanned_to is None else tx.copies.count_blob_ids(
            after=cursor, up_to=page.scanned_to)
    following, wrapped = next_cursor_after(page, cursor)
    return DirectorTick(chunk([sha for _id, sha in page.blobs], batch_size), following,
                        scanned, wrapped)


def replicate_until_met(setup: ReplicationSetup, *, max_ticks: int | None = None,
                        max_batches: int | None = None,
                        on_batch: Callable[[list[str]], object] | None = None,
                        on_store_problem: Callable[[str], object] | None = None
                        ) -> RunSummary:
    """The director and the worker in one loop, in bounded time.

    Scans the catalog from the start, one batch per tick, copying each batch. At the end of
    each full scan it stops when there was nothing to do, when the scan changed nothing, or
    when nothing it left short can improve by scanning again (only failed copies are worth
    retrying, and only while scans still make progress); `max_ticks` / `max_batches` stop it
    sooner. Failures are counted, never raised. `on_batch` hears of each batch copied;
    `on_store_problem` hears once of each store out for the run (at the start, or when it
    fails), with the reason in one line.
    """
    policy, catalog, replicas = setup.policy, setup.catalog, setup.replicas
    reported: set[str] = set()

    def report_new_problems() -> None:
        for store, problem in replicas.problems.items():
            if store not in reported:
                reported.add(store)
                if on_store_problem is not None:
                    on_store_problem(problem)

    report_new_problems()
    total, scan, previous = BatchReport(), BatchReport(), BatchReport()
    cursor, ticks, batches = 0, 0, 0
    stores = tuple(replicas.names.values())
    while ((max_ticks is None or ticks < max_ticks)
           and (max_batches is None or batches < max_batches)):
        tick = retry_on_connection_loss(
            functools.partial(plan_batches, catalog, replicas, retention=policy.retention,
                              max_age=setup.max_age, batch_size=policy.batch_size,
                              cursor=cursor, max_batches=1),
            what="finding under-replicated blobs")
        ticks += 1
        for batch in tick.batches:
            report = archive_batch(catalog, replicas, batch, retention=policy.retention,
                                   max_age=setup.max_age, width=policy.copier_width,
                                   raise_on_failure=False)
            total.add(report)
            scan.add(report)
            batches += 1
            report_new_problems()
            if on_batch is not None:
                on_batch(batch)
        cursor = tick.next_cursor
        if tick.wrapped:
            if not scan_again(scan):
                return RunSummary(total, stores, scan.short, dict(scan.short_reasons),
                                  last_scan=scan)
            previous, scan = scan, BatchReport()
    # Stopped by a limit: what the unfinished scan left short, or the last full scan did.
    last = scan if scan.short >= previous.short else previous
    # Failed and skipped copies of the scan under way if it copied anything, else of the
    # last full one: each blob counted once, those the unfinished scan did not reach again
    # not at all.
    return RunSummary(total, stores, last.short, dict(last.short_reasons), stopped_early=True,
                      last_scan=scan if scan.requested else previous)


def scan_again(scan: BatchReport) -> bool:
    """Whether another full scan could bring more blobs to the policy: only when this one
    changed something and either had failures to retry or found bad sources (the blobs
    behind them may now have other sources)."""
    found_bad = sum(scan.corrupted_found.values()) + sum(scan.missing_found.values())
    return scan.planned > 0 and scan.progressed and (scan.failures > 0 or found_bad > 0)
