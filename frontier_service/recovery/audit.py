"""Find and repair partial loss of a crawl's Redis state (evicted keys, a lagging replica)
against the frontier files and checkpoints, without deleting anything.

Safe while crawlers run: each batch of domains is checked and repaired by one Lua script,
atomic against the claim and release scripts. It only raises `size` and `read_offset`,
applies exclusions the checkpoints hold, and puts a domain back into the queue its
`state` names when that queue lost it; it never changes a leased domain's state or lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from archive_pipelines.archive_error import ArchiveError
from frontier_service.counts import Counts
from frontier_service.frontier.checkpoint import DomainCheckpoint
from frontier_service.frontier.frontier import Frontier
from frontier_service.recovery.disk_frontier import DomainFile, complete_ends, domain_files, read_ahead
from frontier_service.recovery.lua_recovery import (
    AUDIT,
    EXCLUDED,
    MISSING,
    OFFSET,
    REQUEUED,
    SIZE,
    UNFETCHED,
)
from frontier_service.recovery.redis_rebuild import NO_CHECKPOINT

_DOMAINS_PER_SCRIPT = 500  # each call blocks Redis for ~1-2 ms

class EpochChanged(ArchiveError):
    """Redis no longer holds this crawl's state (wiped or replaced during the audit)."""


@dataclass
class AuditReport(Counts):
    """What an audit checked and repaired."""

    checked: int = 0
    missing: int = 0  # domain hashes that were gone: recreated, their URLs re-added to seen
    # (the counters are left as they are: they counted those domains before the loss)
    size_repaired: int = 0  # size below the file's: raised
    offset_repaired: int = 0  # read offset below the checkpoint's: raised
    excluded_repaired: int = 0  # exclusions only the checkpoints still held
    requeued: int = 0  # back into the ready (or leases) queue its state names
    unfetched_domains: int = 0  # after repair: bytes past the read offset, not excluded
    seen_added: int = 0
    seen_recreated: bool = False  # the seen filter itself was lost: every URL re-added
    unknown_files: int = 0
    seconds: float = 0.0

    @property
    def repaired(self) -> int:
        return (self.missing + self.size_repaired + self.offset_repaired
                + self.excluded_repaired + self.requeued)


async def audit(frontier: Frontier, root: Path, checkpoints: Mapping[str, DomainCheckpoint],
                *, crawl_id: str | None = None) -> AuditReport:
    """Check every domain's Redis state against its file and checkpoint, and repair what
    was lost. With `crawl_id`, stop (EpochChanged) if Redis stops holding that crawl.
    Several machines: only the domains whose hash measures this machine's files."""
    machine = frontier.machine.machine if frontier.machine is not None else ""
    started = time.monotonic()
    report = AuditReport()
    files, report.unknown_files = await asyncio.to_thread(domain_files, root, checkpoints)
    seen_lost = not await _seen_intact(frontier)
    if seen_lost:
        await frontier.seen.open()  # recreates what was lost of it, with the same layout
        report.seen_recreated = True
    script = frontier.redis.register_script(AUDIT)
    keys = frontier.state.keys
    missing: list[DomainFile] = []
    async for batch, ends in _file_ends(files):
        codes = await script(keys=[*keys.coordination, keys.epoch],
                             args=[keys.domain_prefix, repr(time.time()), crawl_id or "",
                                   _blob(batch, ends, checkpoints), machine])
        if codes == -1:
            raise EpochChanged(f"Redis no longer holds crawl {keys.name!r} (its epoch changed "
                               "during the audit): rebuild it")
        for domain_file, code in zip(batch, codes, strict=True):
            report.checked += 1
            report.missing += bool(code & MISSING)
            report.size_repaired += bool(code & SIZE)
            report.offset_repaired += bool(code & OFFSET)
            report.excluded_repaired += bool(code & EXCLUDED)
            report.requeued += bool(code & REQUEUED)
            report.unfetched_domains += bool(code & UNFETCHED)
            if code & MISSING:
                missing.append(domain_file)
    await _readd_urls(frontier, files if seen_lost else missing, report)
    report.seconds = time.monotonic() - started
    return report


async def _file_ends(files: Sequence[DomainFile]
                     ) -> AsyncIterator[tuple[Sequence[DomainFile], dict[str, int]]]:
    """Batches of files with where their last lines end; a thread reads the next batch's
    while the caller checks this one."""
    batches = [files[i:i + _DOMAINS_PER_SCRIPT] for i in range(0, len(files), _DOMAINS_PER_SCRIPT)]
    pending: asyncio.Future[dict[str, int]] | None = None
    try:
        for i, batch in enumerate(batches):
            ends = await (pending or asyncio.to_thread(complete_ends, batch))
            pending = asyncio.ensure_future(asyncio.to_thread(complete_ends, batches[i + 1])) \
                if i + 1 < len(batches) else None
            yield batch, ends
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await pending


async def _readd_urls(frontier: Frontier, files: Sequence[DomainFile], report: AuditReport) -> None:
    """Put the files' URLs (back) into the seen filter."""
    fingerprints: list[bytes] = []
    async for _, scan in read_ahead(files):
        fingerprints += scan.fingerprints
        if len(fingerprints) >= 50_000:
            report.seen_added += sum(await frontier.seen.add_many(fingerprints))
            fingerprints = []
    report.seen_added += sum(await frontier.seen.add_many(fingerprints))


async def _seen_intact(frontier: Frontier) -> bool:
    """True if the seen filter's layout and all of its keys are in Redis."""
    seen = frontier.seen
    keys = [seen.meta_key, *([seen.bloom_key] if seen.backend == "bloom" else seen.shard_keys)]
    return int(await frontier.redis.exists(*keys)) == len(keys)


def _blob(batch: Sequence[DomainFile], ends: Mapping[str, int],
          checkpoints: Mapping[str, DomainCheckpoint]) -> str:
    lines = []
    for domain_file in batch:
        checkpoint = checkpoints.get(domain_file.domain, NO_CHECKPOINT)
        excluded = "1" if checkpoint.excluded_reason else "0"
        reason = quote(checkpoint.excluded_reason, safe="") or "-"
        lines.append(f"{domain_file.domain} {ends[domain_file.domain]} {checkpoint.offset} "
                     f"{checkpoint.pages} {excluded} {reason}\n")
    return "".join(lines)
