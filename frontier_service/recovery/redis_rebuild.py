"""Rebuild a crawl's Redis state from disk after Redis lost it (wiped, replaced, evicted).

The frontier files say which domains exist, how many bytes each has queued (its size) and
every URL ever queued (the seen filter); the checkpoints say how far each domain was
fetched, its page count and whether it was excluded. The crawl's coordination keys are
deleted first (domain hashes, the ready and leased queues, counters, the seen filter and
the epoch); the robots.txt cache (`{name}:robots:*`) and the visited store
(`{name}:visited:*`, only read by `stats`) are kept. The epoch key is set last: its
presence means "complete", so a rebuild cut short is simply run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from redis.asyncio import Redis

from archive_pipelines.archive_error import ArchiveError
from frontier_service.counts import Counts
from frontier_service.frontier.checkpoint import (
    DomainCheckpoint,
    checkpoint_dir,
    load_checkpoints,
    merge_dead_sessions,
)
from frontier_service.frontier.folder_locks import lock_rebuild
from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.keys import FrontierKeys
from frontier_service.frontier.seen import SeenFilter
from frontier_service.recovery.disk_frontier import domain_files, read_ahead
from frontier_service.recovery.epoch import (
    EpochState,
    check_epoch,
    ensure_crawl_id,
    glob_escape,
    set_epoch,
)
from frontier_service.recovery.lua_recovery import REBUILD_DOMAINS

log = logging.getLogger(__name__)

Progress = Callable[[str], None]

NO_CHECKPOINT = DomainCheckpoint(0)
_PROGRESS_EVERY_S = 5.0
_DOMAINS_PER_CALL = 2000
_FINGERPRINTS_PER_CALL = 50_000

# The keys a rebuild deletes, after `{name}:`. A domain key is a host (an IPv6 one in
# brackets) and maybe a port, so another crawl named `{name}:domain:x` is left alone.
_REBUILT_KEYS = re.compile(
    rb"domain:(?:[^\s:\[\]]+|\[[0-9a-fA-F:.]+\])(?::\d+)?|domains:(?:ready|leased)|counters"
    rb"|epoch|seen:(?:meta|bf|probe|\d+)")


@dataclass
class RebuildReport(Counts):
    """What a rebuild found on disk and wrote to Redis."""

    domains: int = 0
    ready: int = 0  # with unfetched URLs: queued
    exhausted: int = 0  # fetched to the end of their file
    excluded: int = 0
    urls: int = 0  # URL lines read
    seen_added: int = 0  # new to the seen filter (a URL queued twice counts once)
    bytes: int = 0
    seconds: float = 0.0
    torn_lines: int = 0
    keys_deleted: int = 0
    unknown_files: int = 0  # frontier files whose domain could not be told (skipped)
    bytes_consumed: int = 0
    pages: int = 0


async def rebuild_redis(frontier: Frontier, root: Path,
                        checkpoints: Mapping[str, DomainCheckpoint], *, crawl_id: str,
                        progress: Progress | None = None) -> RebuildReport:
    """Replace the crawl's Redis state with what the frontier files and checkpoints hold.

    No crawler of the crawl may run meanwhile (take folder_locks.lock_rebuild around it).
    """
    started = time.monotonic()
    report = RebuildReport()
    keys = frontier.state.keys
    report.keys_deleted = await delete_crawl_state(frontier.redis, keys)
    await _recreate_seen(frontier)
    files, report.unknown_files = await asyncio.to_thread(domain_files, root, checkpoints)
    reported_at = started
    async with DomainWriter(frontier, report) as writer:
        async for domain_file, scan in read_ahead(files):
            report.urls += scan.urls
            report.torn_lines += scan.torn_lines
            await writer.add_fingerprints(scan.fingerprints)
            if scan.eof:
                await writer.add_domain(domain_file.domain,
                                        checkpoints.get(domain_file.domain, NO_CHECKPOINT),
                                        scan.end)
                if time.monotonic() - reported_at >= _PROGRESS_EVERY_S:
                    reported_at = time.monotonic()
                    (progress or log.info)(
                        f"rebuilding Redis: {report.domains:,} of {len(files):,} domains, "
                        f"{report.urls:,} URLs, {reported_at - started:.0f} s")
    await frontier.redis.hset(keys.counters, mapping={
        "bytes_appended": report.bytes, "bytes_consumed": report.bytes_consumed,
        "urls_added": report.urls, "domains_excluded": report.excluded,
        "pages_fetched": report.pages})
    if report.urls > frontier.seen.capacity:
        log.warning("the frontier files hold %d URLs, more than the seen filter's capacity "
                    "(%d): it now errs more often than configured", report.urls,
                    frontier.seen.capacity)
    await set_epoch(frontier.redis, keys, crawl_id)
    report.seconds = time.monotonic() - started
    return report


async def delete_crawl_state(redis: Redis, keys: FrontierKeys) -> int:
    """UNLINK the crawl's coordination keys and seen filter (the epoch first); returns how
    many. Other crawls' keys, the robots cache and the visited store are left alone."""
    deleted = int(await redis.unlink(keys.epoch))
    prefix = len(keys.name) + 1
    cursor = 0
    while True:
        cursor, found = await redis.scan(cursor, match=glob_escape(keys.name) + ":*", count=5000)
        ours = [k for k in found if _REBUILT_KEYS.fullmatch(_bytes(k)[prefix:])]
        if ours:
            deleted += int(await redis.unlink(*ours))
        if not cursor:
            return deleted


class DomainWriter:
    """Domain hashes and the ready queue written by one script per batch of domains, and
    seen fingerprints in big calls; one call of each kind runs while the next batch is
    made (Redis, not this process, is the bottleneck). Use as `async with`."""

    def __init__(self, frontier: Frontier, report: RebuildReport) -> None:
        self.frontier = frontier
        self.keys = frontier.state.keys
        self.report = report
        self.now = repr(time.time())
        self._script = frontier.redis.register_script(REBUILD_DOMAINS)
        self._lines: list[str] = []
        self._fingerprints: list[bytes] = []
        self._seen_call: asyncio.Future[list[bool]] | None = None
        self._domains_call: asyncio.Future[object] | None = None

    async def __aenter__(self) -> DomainWriter:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        """Send what is left (unless the block raised); never leave a call behind."""
        try:
            if exc_type is None:
                await self._flush_seen()
                await self._flush_domains()
                await self._wait()
        finally:
            for call in (self._seen_call, self._domains_call):
                if call is not None:
                    call.cancel()
                    with contextlib.suppress(Exception, asyncio.CancelledError):
                        await call
            self._seen_call = self._domains_call = None

    async def add_fingerprints(self, fingerprints: list[bytes]) -> None:
        self._fingerprints += fingerprints
        if len(self._fingerprints) >= _FINGERPRINTS_PER_CALL:
            await self._flush_seen()

    async def add_domain(self, domain: str, checkpoint: DomainCheckpoint, size: int) -> None:
        """A domain hash as the scripts keep it: ready if it has unread bytes, not excluded."""
        report = self.report
        offset = min(checkpoint.offset, size)
        state, reason = "-", "-"
        if checkpoint.excluded_reason:
            reason = quote(checkpoint.excluded_reason, safe="")
            report.excluded += 1
        elif size > offset:
            state = "r"
            report.ready += 1
        else:
            report.exhausted += 1
        report.domains += 1
        report.bytes += size
        report.bytes_consumed += offset
        report.pages += checkpoint.pages
        self._lines.append(f"{domain} {size} {offset} {checkpoint.pages} {state} {reason}\n")
        if len(self._lines) >= _DOMAINS_PER_CALL:
            await self._flush_domains()

    async def _flush_seen(self) -> None:
        if self._fingerprints:
            batch, self._fingerprints = self._fingerprints, []
            await self._wait(domains=False)
            self._seen_call = asyncio.ensure_future(self.frontier.seen.add_many(batch))

    async def _flush_domains(self) -> None:
        if self._lines:
            blob, self._lines = "".join(self._lines), []
            await self._wait(seen=False)
            self._domains_call = asyncio.ensure_future(self._script(
                keys=[self.keys.ready], args=[self.keys.domain_prefix, self.now, blob]))

    async def _wait(self, *, seen: bool = True, domains: bool = True) -> None:
        """The calls in flight (the chosen kinds) are done; their errors raise here."""
        if seen and self._seen_call is not None:
            call, self._seen_call = self._seen_call, None
            self.report.seen_added += sum(await call)
        if domains and self._domains_call is not None:
            done, self._domains_call = self._domains_call, None
            await done


async def _recreate_seen(frontier: Frontier) -> None:
    """A new, empty seen filter of the configured size, which the frontier's then adopts."""
    config = frontier.config
    await SeenFilter(frontier.redis, frontier.seen.name, config.seen_capacity,
                     error_rate=config.seen_error_rate, backend=config.seen_backend).open()
    await frontier.seen.open()


def _bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else value


class RebuildRefused(ArchiveError):
    """Redis holds state that a rebuild would replace, and the caller did not allow that."""


async def rebuild_from_disk(frontier: Frontier, root: Path, *,
                            allow: Collection[EpochState] = (EpochState.EMPTY, EpochState.MISSING),
                            progress: Progress | None = None) -> tuple[EpochState, RebuildReport]:
    """Under the crawl's rebuild lock: check what Redis holds, fold dead sessions'
    checkpoints, and rebuild; returns what Redis held before and the report.

    RebuildRefused if Redis's state is not one of `allow` (by default only a wiped or
    partly lost Redis is rebuilt, never a whole one or another crawl's).
    """
    name = frontier.config.name
    directory = checkpoint_dir(root, name)
    lock = await asyncio.to_thread(lock_rebuild, directory)
    try:
        crawl_id = await asyncio.to_thread(ensure_crawl_id, root, name)
        state = await check_epoch(frontier.redis, frontier.state.keys, crawl_id)
        if state not in allow:
            raise RebuildRefused(
                f"Redis already holds crawl {name!r} whole (rebuilding moves its read offsets "
                "back to the last checkpoint)" if state is EpochState.MATCH else
                f"Redis holds another crawl named {name!r} (not the one in {root})")
        await asyncio.to_thread(merge_dead_sessions, directory)
        checkpoints = await asyncio.to_thread(load_checkpoints, directory)
        return state, await rebuild_redis(frontier, root, checkpoints, crawl_id=crawl_id,
                                          progress=progress)
    finally:
        lock.close()
