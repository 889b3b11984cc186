"""InboxConsumer: the URLs other machines (and this one's other processes) found for the
domains of this machine's slots, appended to its frontier files.

Each slot's inbox is a Redis stream read by the consumer group of its owner. The entries of
one read are appended to the files (one write per domain), recorded, acknowledged and
deleted, the last three in one script, so a crash leaves them pending, never lost. A
pending entry of a dead consumer is claimed again after `reclaim_idle_s`; before appending
it again, the file is checked for the lines the dead consumer may have appended (past what
Redis recorded), so none is queued twice.
Entries for a slot that moved on meanwhile are sent on to its new owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redis.exceptions import RedisError

from archive_pipelines.canonical_urls import fingerprint_canonical
from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.machine_state import CHECK, GROUP

log = logging.getLogger(__name__)


class InboxConsumer:
    """Reads this machine's slots' inboxes as `consumer` (one per process)."""

    def __init__(self, frontier: Frontier, *, consumer: str, count: int = 64,
                 block_ms: int = 500, reclaim_idle_s: float = 30.0, gather_s: float = 0.25,
                 on_disk: Callable[[Path], set[bytes]] | None = None) -> None:
        """`on_disk`: the fingerprints of the URLs a frontier file holds (its compacted
        lines too), for the lines sent to be checked first (machine_state.CHECK).
        `gather_s`: after a read that was not full, wait this long before the next, so the
        entries of several of the senders' link flushes (5 a second each) are appended and
        recorded in one step, not one read, write and script per flush."""
        assert frontier.machine is not None
        self.frontier = frontier
        self.machine = frontier.machine
        self.consumer = consumer
        self.count = count
        self.block_ms = block_ms
        self.reclaim_idle_s = reclaim_idle_s
        self.gather_s = gather_s
        self.entries = 0
        self.lines = 0
        self.redelivered = 0
        self.already_appended = 0  # redelivered lines a dead consumer had appended
        self.on_disk = on_disk
        self.already_queued = 0  # checked lines this machine's file already held

    async def run(self, finished: asyncio.Event) -> None:
        reclaimed_at = time.monotonic()
        while not finished.is_set():
            try:
                took = await self.poll()
                if time.monotonic() - reclaimed_at >= min(self.reclaim_idle_s, 10.0):
                    reclaimed_at = time.monotonic()
                    took += await self.reclaim()
            except (RedisError, OSError) as exc:
                log.warning("reading the inboxes failed (%s); retrying", exc)
                took = 0
            if took < self.count:  # (more waiting: read on at once)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(finished.wait(), 0.2 if not took else self.gather_s)

    async def poll(self) -> int:
        """Take new entries of the slots this machine owns; returns how many."""
        slots = sorted(self.machine.mine)
        if not slots:
            return 0
        keys = self.frontier.state.keys
        found: Any = await self.frontier.redis.xreadgroup(
            GROUP, self.consumer, {keys.inbox(slot): ">" for slot in slots},
            count=self.count, block=self.block_ms)
        entries = [(_text(stream), _text(entry_id), fields)
                   for stream, batch in found or [] for entry_id, fields in batch]
        if entries:
            await self.take_many(entries)
        return len(entries)

    async def take_many(self, entries: list[tuple[str, str, dict]]) -> None:
        """New entries (never delivered before): their lines appended in one write per domain
        and recorded, and the entries acknowledged, in one script."""
        batches: dict[str, bytes] = {}
        for _, _, fields in entries:
            for domain, lines in (await self._checked(fields)).items():
                batches[domain] = batches.get(domain, b"") + lines
        batches = {domain: lines for domain, lines in batches.items() if lines}
        counts = {domain: lines.count(b"\n") for domain, lines in batches.items()}
        acks = [(stream, entry_id) for stream, entry_id, _ in entries]
        refused = await self.frontier.append_owned(batches, counts=counts, ack=acks)
        if refused:
            await self._send_refused({d: batches[d] for d in refused}, acks)
        self.entries += len(entries)
        self.lines += sum(counts.values())

    async def _send_refused(self, lines: dict[str, bytes], acks: list[tuple[str, str]]) -> None:
        """Domains whose slot moved on: to the new owner, then the entries acknowledged."""
        await self.machine.send(lines)
        async with self.frontier.redis.pipeline(transaction=True) as pipe:
            for stream, entry_id in acks:
                pipe.xack(stream, GROUP, entry_id)
                pipe.xdel(stream, entry_id)
            await pipe.execute()

    async def reclaim(self) -> int:
        """Take the entries other consumers of this group left pending (they died)."""
        taken = 0
        keys = self.frontier.state.keys
        for slot in sorted(self.machine.mine):
            stream = keys.inbox(slot)
            result = await self.frontier.redis.xautoclaim(
                stream, GROUP, self.consumer, min_idle_time=int(self.reclaim_idle_s * 1000),
                start_id="0-0", count=self.count)
            for entry_id, fields in result[1]:
                if fields:  # (deleted entries come back empty)
                    await self.take(stream, _text(entry_id), fields, redelivered=True)
                    taken += 1
        return taken

    async def _checked(self, fields: dict) -> dict[str, bytes]:
        """An entry's lines by domain; those sent to be checked (CHECK) without the URLs
        this machine's file already holds."""
        out = {}
        for name, value in fields.items():
            domain, lines = _text(name), _lines(value)
            if domain.startswith(CHECK):
                domain = domain.removeprefix(CHECK)
                if self.on_disk is not None and lines:
                    held = await asyncio.to_thread(self.on_disk, self.frontier.files.path_for(domain))
                    kept = [line for line in lines.splitlines(keepends=True)
                            if _fingerprint(line) not in held]
                    self.already_queued += lines.count(b"\n") - len(kept)
                    lines = b"".join(kept)
            out[domain] = lines
        return out

    async def take(self, stream: str, entry_id: str, fields: dict, *, redelivered: bool) -> None:
        batches = await self._checked(fields)
        batches = {domain: lines for domain, lines in batches.items() if lines}
        counts = {domain: lines.count(b"\n") for domain, lines in batches.items()}
        done: dict[str, tuple[int, int]] = {}
        if redelivered:
            self.redelivered += 1
            done = await self._already_appended(batches)
            self.already_appended += sum(counts[d] for d in done)
        fresh = {d: lines for d, lines in batches.items() if d not in done}
        refused = await self.frontier.append_owned(
            fresh, counts=counts, ack=[(stream, entry_id)], appended=done)
        if refused:
            await self._send_refused({d: batches[d] for d in refused}, [(stream, entry_id)])
        self.entries += 1
        self.lines += sum(counts.values())

    async def _already_appended(self, batches: dict[str, bytes]) -> dict[str, tuple[int, int]]:
        """Domains whose file already ends with these lines past the size Redis records
        (a consumer appended them and died before recording): their (start, end)."""
        found = {}
        keys = self.frontier.state.keys
        for domain, lines in batches.items():
            size, m = await self.frontier.redis.hmget(keys.domain(domain), ["size", "m"])
            recorded = int(size or 0) if m is not None and _text(m) == self.machine.machine else 0
            data = b"\n" + lines
            path = self.frontier.files.path_for(domain)
            tail = await asyncio.to_thread(_tail, path, len(data))
            if tail is not None and tail[1] == data and tail[0] - len(data) >= recorded:
                found[domain] = (tail[0] - len(data), tail[0])
        return found


def _fingerprint(line: bytes) -> bytes:
    return fingerprint_canonical(line.split(b"|", 1)[0].decode("utf-8", "replace"))


def _tail(path: os.PathLike[str], n: int) -> tuple[int, bytes] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size < n:
            return None
        return size, os.pread(fd, n, size - n)
    finally:
        os.close(fd)


def _lines(value: bytes | str) -> bytes:
    """Whole, non-empty frontier lines, each ending in a newline."""
    data = value if isinstance(value, bytes) else value.encode()
    if b"\0" not in data and b"\n\n" not in data and data[:1] != b"\n":  # as sent: no line to drop
        return data if not data or data[-1:] == b"\n" else data + b"\n"
    return b"".join(line + b"\n" for line in data.split(b"\n") if line.strip(b"\0"))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
