"""One batch of each source table written into the hybrid frontier.

Each function is idempotent for its batch (run again after a kill, it changes nothing more),
so the migration checkpoint only has to say which batches are done; the frontier batch,
which appends to files, gets that from its pending record (migrate_checkpoint.py).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Sequence
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
    for i in range(0, len(robots_entries), _CONCURRENT_CALLS):
        chunk = robots_entries[i:i + _CONCURRENT_CALLS]
        await asyncio.gather(*(robots.set(origin, entry) for origin, entry in chunk))
    checkpoint.count("domains_excluded", len(excluded))
    checkpoint.count("domains_robots", len(robots_entries) // 2)


async def migrate_visited(rows: Sequence[Row], *, frontier: Frontier,
                          checkpoint: MigrationCheckpoint) -> None:
    """Visited URLs (and the URLs they redirected to) into the seen filter, so the crawl
    never queues them again, and into the visited store."""
    from frontier_service.frontier.visited import VisitedRecord

    urls = [row[0] for row in rows]
    targets = [row[5] for row in rows if row[5]]
    found = try_canonical_many(urls)
    landed = try_canonical_many(targets)
    records = []
    fingerprints = []
    for row, parsed in zip(rows, found, strict=True):
        if parsed is None:
            continue
        fingerprints.append(parsed[2])
        fetched_at = epoch_seconds(row[2])
        records.append(VisitedRecord(parsed[0], int(row[3] or 0),
                                     int(fetched_at) if fetched_at is not None else 0))
    fingerprints += [parsed[2] for parsed in landed if parsed is not None]
    await frontier.seen.add_many(fingerprints)
    await frontier.visited.mark_many(records)
    checkpoint.count("visited_invalid", len(rows) - len(records))
    checkpoint.count("visited_records", len(records))


class FrontierBatches:
    """Frontier rows appended to the per-domain files, at most once each across kills."""

    def __init__(self, frontier: Frontier, checkpoint: MigrationCheckpoint) -> None:
        self.frontier = frontier
        self.checkpoint = checkpoint
        self._sizes: dict[str, int] = {}  # the migration is the files' only writer

    async def migrate(self, rows: Sequence[Row], *, after: str | None,
                      save: Any) -> None:
        """Append the batch's new URLs: first `save` a pending record (the files' sizes),
        then append, then mark them seen and record the appends; the caller then saves the
        checkpoint past the batch. A pending record left by a kill makes this the re-run
        of that batch: URLs already in the files past those sizes are not appended again."""
        files = self.frontier.files
        redo = self.checkpoint.pending
        already: dict[str, set[str]] = {}
        if redo is not None:
            already = await asyncio.to_thread(_appended_since, files, redo.sizes)
        found = try_canonical_many([row[0] for row in rows])
        batch: dict[bytes, tuple[str, str, int, int]] = {}
        for row, parsed in zip(rows, found, strict=True):
            if parsed is not None and parsed[2] not in batch:
                added_at = epoch_seconds(row[3])
                batch[parsed[2]] = (parsed[0], parsed[1], int(row[2] or 0),
                                    int(added_at) if added_at is not None else 0)
        invalid = len(rows) - sum(parsed is not None for parsed in found)
        fingerprints = list(batch)
        seen = await self.frontier.seen.contains_many(fingerprints)
        lines: dict[str, list[str]] = {}
        skipped = 0
        for fingerprint, was_seen in zip(fingerprints, seen, strict=True):
            if was_seen:
                continue
            url, domain, depth, added_at = batch[fingerprint]
            if url in already.get(domain, ()):
                skipped += 1
                continue
            lines.setdefault(domain, []).append(f"{url}|{depth}|1|{added_at}\n")
        if redo is None:
            sizes = {domain: await self._size(domain) for domain in lines}
            self.checkpoint.pending = PendingBatch(after, str(rows[-1][0]), sizes)
            await asyncio.to_thread(save)
        offsets = await asyncio.to_thread(
            files.append_many, {d: "".join(pending).encode() for d, pending in lines.items()})
        for domain, (_, end) in offsets.items():
            self._sizes[domain] = end
        # durable before the seen filter says "queued" and the checkpoint moves on
        await asyncio.to_thread(sync_filesystem, files.base)
        new = [fp for fp, was_seen in zip(fingerprints, seen, strict=True) if not was_seen]
        await self.frontier.seen.add_many(new)
        appends = [(domain, end, len(lines[domain])) for domain, (_, end) in offsets.items()]
        if redo is not None:  # lines the killed run appended but may not have recorded
            appends += [(domain, await self._size(domain), 0)
                        for domain in redo.sizes if domain not in offsets]
        await self.frontier.state.record_appends(time.time(), appends, offered=len(batch))
        added = sum(len(pending) for pending in lines.values())
        self.checkpoint.count("frontier_queued", added + skipped)
        self.checkpoint.count("frontier_invalid", invalid)
        self.checkpoint.count("frontier_dropped_seen", len(batch) - added - skipped)
        self.checkpoint.count("frontier_dropped_in_batch", len(rows) - invalid - len(batch))
        self.checkpoint.pending = None

    async def _size(self, domain: str) -> int:
        size = self._sizes.get(domain)
        if size is None:
            size = self._sizes[domain] = await asyncio.to_thread(self.frontier.files.size, domain)
        return size


def _appended_since(files: Any, sizes: dict[str, int]) -> dict[str, set[str]]:
    """The URLs each domain's file holds past its size before the killed batch."""
    found: dict[str, set[str]] = {}
    for domain, size in sizes.items():
        records, _ = files.read_from(domain, size, 10_000_000)
        found[domain] = {record.url for record in records}
    return found
