"""One batch of each source table written into the hybrid frontier.

Each function is idempotent for its batch (run again after a kill, it changes nothing more),
so the migration checkpoint only has to say which batches are done; the frontier batch,
which appends to files, gets that from its pending record (migrate_checkpoint.py).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from archive_pipelines.blobstore.local_files import sync_filesystem
from archive_pipelines.canonical_urls import try_canonical_many, try_canonical_url_and_domain
from frontier_service.fetch.redis_robots_store import RedisRobotsStore
from frontier_service.fetch.robots import MAX_ROBOTS_BYTES
from frontier_service.fetch.robots_rules import RobotsSource
from frontier_service.fetch.robots_store import StoredRobots
from frontier_service.frontier.checkpoint import OffsetCheckpoint
from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.frontier_files import FrontierFiles
from frontier_service.migration.migrate_checkpoint import MigrationCheckpoint, PendingBatch
from frontier_service.migration.postgres_source import Row

EXCLUDED_REASON = "manually excluded (migrated from PostgreSQL)"
_CONCURRENT_CALLS = 200


def epoch_seconds(value: Any) -> float | None:
    """A timestamp column's value as unix seconds: a timestamp (naive ones are UTC), or a
    number of seconds; None for NULL."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).timestamp()
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC).timestamp()
    return float(value)


def domain_key_of(domain: str) -> str | None:
    """Our domain key for the old table's `domain` (a host, maybe with a port, or a URL)."""
    text = domain.strip()
    url = text if "://" in text else f"http://{text}/"
    found = try_canonical_url_and_domain(url)
    return found[1] if found is not None else None


@dataclass(frozen=True, slots=True)
class DomainSettings:
    now: float
    min_delay_s: float  # after the old crawler's last scheduled fetch, the next is due


async def migrate_domains(rows: Sequence[Row], *, frontier: Frontier, robots: RedisRobotsStore,
                          offsets: OffsetCheckpoint, settings: DomainSettings,
                          checkpoint: MigrationCheckpoint) -> None:
    """Exclusions (kept in an offset checkpoint too, so a Redis rebuild keeps them), next
    fetch times (before the domain's first URL makes it ready: its ready score) and unexpired
    robots.txt bodies (for both schemes' origins)."""
    keys = frontier.state.keys
    excluded: list[str] = []
    robots_entries: list[tuple[str, StoredRobots]] = []
    async with frontier.redis.pipeline(transaction=False) as pipe:
        for domain, body, expires, is_excluded, last_scheduled in rows:
            key = domain_key_of(domain)
            if key is None:
                checkpoint.count("domains_invalid", 1)
                continue
            if is_excluded:
                excluded.append(key)
            scheduled = epoch_seconds(last_scheduled)
            if scheduled is not None:
                pipe.hset(keys.domain(key), "next_fetch_at",
                          repr(scheduled + settings.min_delay_s))
                checkpoint.count("domains_next_fetch", 1)
            expires_at = epoch_seconds(expires)
            if body is not None and expires_at is not None and expires_at > settings.now:
                data = body.encode() if isinstance(body, str) else bytes(body)
                entry = StoredRobots(data[:MAX_ROBOTS_BYTES], expires_at, RobotsSource.PARSED,
                                     truncated=len(data) > MAX_ROBOTS_BYTES)
                robots_entries += [(f"{scheme}://{key}", entry) for scheme in ("http", "https")]
        await pipe.execute()
    for i in range(0, len(excluded), _CONCURRENT_CALLS):
        chunk = excluded[i:i + _CONCURRENT_CALLS]
        await asyncio.gather(*(frontier.state.exclude(key, EXCLUDED_REASON) for key in chunk))
    for key in excluded:
        offsets.exclude(key, EXCLUDED_REASON)
    await asyncio.to_thread(offsets.write)
    for i in range(0, len(robots_entries), 1000):
        await robots.set_many(robots_entries[i:i + 1000])
    checkpoint.count("domains_excluded", len(excluded))
    checkpoint.count("domains_robots", len(robots_entries) // 2)


async def migrate_visited(rows: Sequence[Row], *, frontier: Frontier,
                          checkpoint: MigrationCheckpoint) -> None:
    """Visited URLs (and the URLs they redirected to) into the seen filter, so the crawl
    never queues them again, and into the visited store."""
    from frontier_service.frontier.visited import VisitedRecord

    found = try_canonical_many([row[0] for row in rows])
    records = []
    fingerprints = []
    targets = []
    for row, parsed in zip(rows, found, strict=True):
        if parsed is None:
            continue
        fingerprints.append(parsed[2])
        fetched_at = epoch_seconds(row[2])
        record = VisitedRecord(parsed[0], int(row[3] or 0),
                               int(fetched_at) if fetched_at is not None else 0)
        records.append(record)
        if row[5]:
            targets.append((row[5], record))
    invalid = len(rows) - len(records)
    # where a fetch was redirected to was fetched with it (the stored content is the target's)
    for (_, record), parsed in zip(targets, try_canonical_many([t for t, _ in targets]),
                                   strict=True):
        if parsed is not None:
            fingerprints.append(parsed[2])
            records.append(VisitedRecord(parsed[0], record.status, record.fetched_at))
    await frontier.seen.add_many(fingerprints)
    await frontier.visited.mark_many(records)
    checkpoint.count("visited_invalid", invalid)
    checkpoint.count("visited_records", len(records))


Prepared = tuple[Sequence[Row], list[tuple[str, str, bytes] | None]]


class FrontierBatches:
    """Frontier rows appended to the per-domain files, at most once each across kills."""

    def __init__(self, frontier: Frontier, checkpoint: MigrationCheckpoint) -> None:
        self.frontier = frontier
        self.checkpoint = checkpoint
        self._sizes: dict[str, int] = {}  # the migration is the files' only writer

    @staticmethod
    def prepare(rows: Sequence[Row]) -> Prepared:
        """The batch canonicalized (pure CPU: done in the reading thread, while the event
        loop waits for Redis and the disk on the batch before)."""
        return rows, try_canonical_many([row[0] for row in rows])

    async def migrate(self, prepared: Prepared, *, after: str | None,
                      save: Callable[[], None]) -> None:
        """Append the batch's new URLs. First `save` a pending record (the range and the
        sizes of the files it may append to), then one seen-filter call says which URLs
        are new, they are appended and synced, and the appends recorded; the caller then
        saves the checkpoint past the batch.

        With a pending record left by a kill, this is that batch again, and the seen filter
        may already hold its URLs: a URL is new unless its domain's file or the visited
        store has it (both exact)."""
        redo = self.checkpoint.pending
        rows, found = prepared
        batch: dict[bytes, tuple[str, str, int, int]] = {}
        for row, parsed in zip(rows, found, strict=True):
            if parsed is not None and parsed[2] not in batch:
                added_at = epoch_seconds(row[3])
                batch[parsed[2]] = (parsed[0], parsed[1], int(row[2] or 0),
                                    int(added_at) if added_at is not None else 0)
        invalid = len(rows) - sum(parsed is not None for parsed in found)
        if redo is None:
            sizes = {entry[1]: await self._size(entry[1]) for entry in batch.values()}
            self.checkpoint.pending = PendingBatch(after, str(rows[-1][0]), sizes)
            await asyncio.to_thread(save)
        fingerprints = list(batch)
        is_new = await self.frontier.seen.add_many(fingerprints)
        if redo is not None:
            is_new = await self._new_after_kill([batch[fp] for fp in fingerprints])
        lines: dict[str, list[str]] = {}
        for fingerprint, new in zip(fingerprints, is_new, strict=True):
            if new:
                url, domain, depth, added_at = batch[fingerprint]
                lines.setdefault(domain, []).append(f"{url}|{depth}|1|{added_at}\n")
        files = self.frontier.files
        offsets = await asyncio.to_thread(
            files.append_many, {d: "".join(pending).encode() for d, pending in lines.items()})
        for domain, (_, end) in offsets.items():
            self._sizes[domain] = end
        # on disk before the checkpoint moves past them
        await asyncio.to_thread(sync_filesystem, files.base)
        appends = [(domain, end, len(lines[domain])) for domain, (_, end) in offsets.items()]
        if redo is not None:  # lines the killed run appended but may not have recorded
            appends += [(domain, await self._size(domain), 0)
                        for domain in redo.sizes if domain not in offsets]
        await self.frontier.state.record_appends(time.time(), appends, offered=len(batch))
        added = sum(len(pending) for pending in lines.values())
        self.checkpoint.count("frontier_queued", added)
        self.checkpoint.count("frontier_invalid", invalid)
        self.checkpoint.count("frontier_dropped_seen", len(batch) - added)
        self.checkpoint.count("frontier_dropped_in_batch", len(rows) - invalid - len(batch))
        self.checkpoint.pending = None

    async def _new_after_kill(self, entries: list[tuple[str, str, int, int]]) -> list[bool]:
        """For the batch a kill interrupted: new = in neither its domain's file (whole: an
        earlier batch may have queued the same URL) nor the visited store."""
        queued = await asyncio.to_thread(
            _urls_in_files, self.frontier.files, {entry[1] for entry in entries})
        visits = await self.frontier.visited.get_many([entry[0] for entry in entries])
        redone = [entry[0] not in queued.get(entry[1], ()) and visit is None
                  for entry, visit in zip(entries, visits, strict=True)]
        self.checkpoint.count("frontier_redone_after_kill", len(entries))
        return redone

    async def _size(self, domain: str) -> int:
        size = self._sizes.get(domain)
        if size is None:
            size = self._sizes[domain] = await asyncio.to_thread(self.frontier.files.size, domain)
        return size


def _urls_in_files(files: FrontierFiles, domains: set[str]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for domain in domains:
        records, _ = files.read_from(domain, 0, 1 << 40)
        found[domain] = {record.url for record in records}
    return found
