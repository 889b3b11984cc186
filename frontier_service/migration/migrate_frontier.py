"""Frontier rows appended to the per-domain files, at most once each across kills, with one
batch's seen-filter call in Redis while the batch before it is written to the files.

Batches go through in windows of `batches_per_sync`. Before a batch touches the seen filter,
the checkpoint's pending record is extended to it, durably: it then spans every batch not
synced yet, from the last key synced to the batch's last key, and names every file they may
append to. A window ends with one syncfs of its appends (while the next window's batches
go on), and the checkpoint moves past it in the same write that narrows the pending record
to the windows after it (migrate_checkpoint.py says why a pending record left by a kill is
enough to redo its range without a line twice or lost).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from archive_pipelines.blobstore.local_files import sync_filesystem
from archive_pipelines.canonical_urls import try_canonical_many
from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.frontier_files import FrontierFiles
from frontier_service.migration.migrate_checkpoint import MigrationCheckpoint, PendingBatch
from frontier_service.migration.migrate_tables import epoch_seconds
from frontier_service.migration.postgres_source import FRONTIER, Row


@dataclass(frozen=True, slots=True)
class FrontierBatch:
    """A batch of frontier rows canonicalized, its twins dropped and its lines formatted;
    the lists hold one item per distinct URL, in the order of the rows."""

    through: str  # the key of its last row
    rows: int
    invalid: int
    fingerprints: list[bytes]
    urls: list[str]
    domains: list[str]
    lines: list[str]
    redo: PendingBatch | None = None  # the window a kill interrupted, read again whole


def prepare_batch(rows: Sequence[Row], *, through: str | None = None,
                  redo: PendingBatch | None = None) -> FrontierBatch:
    """The batch ready to test and write (pure CPU: run in the thread that read it)."""
    fingerprints: list[bytes] = []
    urls: list[str] = []
    domains: list[str] = []
    lines: list[str] = []
    taken: set[bytes] = set()
    invalid = 0
    for row, found in zip(rows, try_canonical_many([row[0] for row in rows]), strict=True):
        if found is None:
            invalid += 1
            continue
        url, domain, fingerprint = found
        if fingerprint in taken:
            continue
        taken.add(fingerprint)
        added_at = epoch_seconds(row[3])
        fingerprints.append(fingerprint)
        urls.append(url)
        domains.append(domain)
        # Canonical URLs never hold `|`, CR, LF or spaces: they go into lines as they are.
        lines.append(f"{url}|{int(row[2] or 0)}|1|{int(added_at) if added_at is not None else 0}\n")
    if through is None:
        through = str(rows[-1][0])
    return FrontierBatch(through, len(rows), invalid, fingerprints, urls, domains, lines, redo)


@dataclass
class _Window:
    """Batches tested since the sync before began."""

    batches: int = 0
    rows: int = 0
    through: str | None = None
    sizes: dict[str, int] = field(default_factory=dict)  # the files it may append to
    counts: Counter[str] = field(default_factory=Counter)


class FrontierBatches:
    """Writes frontier batches; `migrate` each in key order, then `sync` once at the end."""

    def __init__(self, frontier: Frontier, checkpoint: MigrationCheckpoint, *,
                 save: Callable[[], Awaitable[None]], batches_per_sync: int = 5) -> None:
        self.frontier = frontier
        self.checkpoint = checkpoint
        self.save = save  # writes the checkpoint as it is when called
        self.batches_per_sync = max(1, batches_per_sync)
        self._sizes: dict[str, int] = {}  # the migration is the files' only writer
        self._writing: asyncio.Future[None] | None = None  # the batch before's appends
        self._open = _Window()
        self._syncing: _Window | None = None  # the window before, being synced
        self._sync_task: asyncio.Future[None] | None = None
        self._save_lock = asyncio.Lock()  # saves land in the order they were taken

    async def migrate(self, batch: FrontierBatch) -> None:
        """Test the batch's URLs against the seen filter (once the pending record covers
        it), then start appending the new ones while the caller reads the next batch."""
        if batch.redo is not None:
            await self._redo(batch, batch.redo)
            return
        if self._open.batches >= self.batches_per_sync:
            await self._start_sync()
        await self._extend_window(batch)
        is_new = await self.frontier.seen.add_many(batch.fingerprints)
        await self._written()
        self._writing = asyncio.ensure_future(self._write(batch, is_new, window=self._open))

    async def sync(self) -> None:
        """Sync every window: the appends done and on disk, the checkpoint past them."""
        if self._open.batches:
            await self._start_sync()
        await self._synced()

    async def _start_sync(self) -> None:
        """Close the open window and sync it in the background (after the one before)."""
        await self._synced()
        window, self._open = self._open, _Window()
        self._syncing = window
        self._sync_task = asyncio.ensure_future(self._sync(window, self._writing))

    async def _synced(self) -> None:
        task, self._sync_task = self._sync_task, None
        if task is not None:
            await task

    async def _sync(self, window: _Window, last_write: asyncio.Future[None] | None) -> None:
        """The window's appends (each waits for the one before) synced, then the
        checkpoint moved past it; the pending record keeps only the open window."""
        if last_write is not None:
            await last_write
        await asyncio.to_thread(sync_filesystem, self.frontier.files.base)
        state = self.checkpoint.table(FRONTIER.name)
        assert window.through is not None
        state.after = window.through
        state.rows += window.rows
        for name, amount in window.counts.items():
            self.checkpoint.count(name, amount)
        self._syncing = None
        await self._save_checkpoint()

    async def _extend_window(self, batch: FrontierBatch) -> None:
        """The pending record extended to the batch, on disk before the batch is tested."""
        window, syncing = self._open, self._syncing
        await self._known_sizes({d for d in batch.domains if d not in window.sizes})
        for domain in batch.domains:
            if domain not in window.sizes:  # before the window, or before the one syncing
                window.sizes[domain] = (syncing.sizes.get(domain, self._sizes[domain])
                                        if syncing is not None else self._sizes[domain])
        window.batches += 1
        window.rows += batch.rows
        window.through = batch.through
        await self._save_checkpoint()

    async def _save_checkpoint(self) -> None:
        """Save the checkpoint with the pending record of the windows not synced yet."""
        async with self._save_lock:
            windows = [w for w in (self._syncing, self._open) if w is not None and w.batches]
            pending = None
            if windows:
                sizes: dict[str, int] = {}
                for window in windows:
                    for domain, size in window.sizes.items():
                        sizes.setdefault(domain, size)
                assert windows[-1].through is not None
                pending = PendingBatch(self.checkpoint.table(FRONTIER.name).after,
                                       windows[-1].through, sizes)
            self.checkpoint.pending = pending
            await self.save()

    async def _written(self) -> None:
        writing, self._writing = self._writing, None
        if writing is not None:
            await writing

    async def _write(self, batch: FrontierBatch, is_new: list[bool], *, window: _Window,
                     more: Sequence[str] = ()) -> None:
        """Append the batch's new URLs and record the appends (and `more` files' sizes)."""
        files = self.frontier.files
        offsets, counts = await asyncio.to_thread(_append_new, files, batch, is_new)
        for domain, (_, end) in offsets.items():
            self._sizes[domain] = end
        appends = [(domain, end, counts[domain]) for domain, (_, end) in offsets.items()]
        appends += [(domain, self._sizes[domain], 0) for domain in more if domain not in offsets]
        await self.frontier.state.record_appends(time.time(), appends,
                                                 offered=len(batch.fingerprints))
        added = sum(counts.values())
        window.counts["frontier_queued"] += added
        window.counts["frontier_invalid"] += batch.invalid
        window.counts["frontier_dropped_seen"] += len(batch.fingerprints) - added
        window.counts["frontier_dropped_in_batch"] += (batch.rows - batch.invalid
                                                       - len(batch.fingerprints))

    async def _redo(self, batch: FrontierBatch, redo: PendingBatch) -> None:
        """The window a kill interrupted, as one batch: the seen filter may hold its URLs
        already, so a URL is new unless its domain's file or the visited store has it (both
        exact); the files it may have appended to without recording it are recorded. Its
        pending record stays as it was until it is synced."""
        await self.sync()
        window = self._open = _Window(1, batch.rows, redo.through, dict(redo.sizes))
        await self.frontier.seen.add_many(batch.fingerprints)
        is_new = await self._new_after_kill(batch, window=window)
        await self._known_sizes(set(redo.sizes))
        self._writing = asyncio.ensure_future(
            self._write(batch, is_new, window=window, more=list(redo.sizes)))
        await self.sync()

    async def _new_after_kill(self, batch: FrontierBatch, *, window: _Window) -> list[bool]:
        queued = await asyncio.to_thread(_urls_in_files, self.frontier.files, set(batch.domains))
        visits = await self.frontier.visited.get_many(batch.urls)
        window.counts["frontier_redone_after_kill"] += len(batch.urls)
        return [url not in queued[domain] and visit is None
                for url, domain, visit in zip(batch.urls, batch.domains, visits, strict=True)]

    async def _known_sizes(self, domains: set[str]) -> None:
        """Files' sizes in the cache (one thread hop for all the new ones)."""
        unknown = [d for d in domains if d not in self._sizes]
        if unknown:
            files = self.frontier.files
            sizes = await asyncio.to_thread(lambda: [files.size(d) for d in unknown])
            self._sizes.update(zip(unknown, sizes, strict=True))


def _append_new(files: FrontierFiles, batch: FrontierBatch, is_new: list[bool]
                ) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    """Append the new URLs' lines, one write per file; (offsets, lines) per domain."""
    lines: dict[str, list[str]] = {}
    for new, domain, line in zip(is_new, batch.domains, batch.lines, strict=True):
        if new:
            pending = lines.get(domain)
            if pending is None:
                lines[domain] = pending = []
            pending.append(line)
    offsets = files.append_many({d: "".join(pending).encode() for d, pending in lines.items()})
    return offsets, {d: len(pending) for d, pending in lines.items()}


def _urls_in_files(files: FrontierFiles, domains: set[str]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for domain in domains:
        records, _ = files.read_from(domain, 0, 1 << 40)
        found[domain] = {record.url for record in records}
    return found
