"""One batch of each source table written into the hybrid frontier.

Each function is idempotent for its batch (run again after a kill, it changes nothing more),
so the migration checkpoint only has to say which batches are done. The frontier's batches,
which append to files, are migrate_frontier.py's.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from archive_pipelines.canonical_urls import try_canonical_many, try_canonical_url_and_domain
from frontier_service.fetch.redis_robots_store import RedisRobotsStore
from frontier_service.fetch.robots import MAX_ROBOTS_BYTES
from frontier_service.fetch.robots_rules import RobotsSource
from frontier_service.fetch.robots_store import StoredRobots
from frontier_service.frontier.checkpoint import OffsetCheckpoint
from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.visited import VisitedRecord
from frontier_service.migration.migrate_checkpoint import MigrationCheckpoint
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


@dataclass(frozen=True, slots=True)
class VisitedBatch:
    """A batch of visited rows canonicalized (in the thread that read it): the visits of
    its valid URLs and of the URLs they redirected to, with their fingerprints."""

    through: str  # the key of its last row
    rows: int
    invalid: int
    records: list[VisitedRecord]
    fingerprints: list[bytes]


def prepare_visited(rows: Sequence[Row]) -> VisitedBatch:
    """The batch's visits, each URL canonicalized once (pure CPU)."""
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
    return VisitedBatch(str(rows[-1][0]), len(rows), invalid, records, fingerprints)


async def migrate_visited(batch: VisitedBatch, *, frontier: Frontier,
                          checkpoint: MigrationCheckpoint) -> None:
    """Visited URLs (and the URLs they redirected to) into the seen filter, so the crawl
    never queues them again, and into the visited store (the two at once)."""
    await asyncio.gather(frontier.seen.add_many(batch.fingerprints),
                         frontier.visited.mark_many(batch.records,
                                                    fingerprints=batch.fingerprints))
    checkpoint.count("visited_invalid", batch.invalid)
    checkpoint.count("visited_records", len(batch.records))
