"""What the frontier files on disk hold, read for a Redis rebuild or audit: each file's
domain key, where its last complete line ends, and its URLs' seen-filter fingerprints.

A compacted file's consumed prefix is a hole of NUL bytes: skipped as consumed (its URLs
are no longer on disk), never counted as torn lines."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from archive_pipelines.canonical_urls import try_canonical_url_and_domain
from frontier_service.frontier.compaction import read_seen
from frontier_service.frontier.frontier_files import frontier_file_name, past_consumed, walk
from frontier_service.frontier.frontier_record import parse_kind

log = logging.getLogger(__name__)

_CHUNK = 8 << 20
BATCH_BYTES = 16 << 20  # bytes of files read at a time (bounds the fingerprints held)
_BATCH_FILES = 2000
_TAIL = 64 << 10
_DOMAIN_TOKEN = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class DomainFile:
    domain: str
    path: Path
    size: int


@dataclass(slots=True)
class FileScan:
    """Part of a frontier file read: its URL lines' fingerprints, and where the read ended."""

    end: int = 0  # just after the last whole line read
    eof: bool = False  # end is then the file's last newline (a torn tail is not counted)
    urls: int = 0
    torn_lines: int = 0
    fingerprints: list[bytes] = field(default_factory=list)


def domain_files(root: Path, known: Iterable[str] = ()) -> tuple[list[DomainFile], int]:
    """Every frontier file with its domain key, and how many files had none that could be
    told. A long (hashed) file name is matched against the `known` domain keys (e.g. the
    checkpoints'), else its first URL line names the domain."""
    found: list[DomainFile] = []
    unknown = 0
    by_name: dict[str, str] | None = None
    for domain, path, size in walk(root):
        if domain is None:
            if by_name is None:
                by_name = {frontier_file_name(d): d for d in known}
            domain = by_name.get(path.name) or _first_line_domain(path)
        if domain is None or _DOMAIN_TOKEN.fullmatch(domain) is None:
            log.warning("skipping %s: cannot tell which domain key it holds", path)
            unknown += 1
            continue
        found.append(DomainFile(domain, path, size))
    return found, unknown


def scan_file(path: Path, *, start: int = 0, limit: int | None = None) -> FileScan:
    """Read a frontier file from `start` in big chunks, up to the first line end past `limit`
    bytes (None: to the end): its URL lines, torn lines and URL fingerprints (blake2b-16 of
    the canonical URL, as `fingerprint_canonical` makes them)."""
    scan = FileScan(end=start)
    if start == 0:  # the lines compaction punched out left their fingerprints here
        saved = read_seen(path)
        scan.urls += len(saved)
        scan.fingerprints += saved
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        scan.eof = True
        return scan
    try:
        carry = b""
        position = start
        chunk = _CHUNK if limit is None else max(1, min(_CHUNK, limit))
        while True:
            data = os.pread(fd, chunk, position)
            if not data:
                scan.eof = True
                break
            if not carry and data[:1] == b"\0":
                position = past_consumed(fd, position, data)
                continue
            position += len(data)
            if carry:
                data = carry + data
            cut = data.rfind(b"\n") + 1
            carry = data[cut:]
            if not carry.strip(b"\0"):
                carry = b""  # NULs of a compacted prefix up to here: consumed
            if cut:
                _scan_lines(data[:cut], scan)
            if limit is not None and position - start >= limit and cut:
                break
        scan.end = position - len(carry)
    finally:
        os.close(fd)
    return scan


def complete_end(path: Path) -> int:
    """Bytes of the file up to its last newline (0 if missing): a writer that died (or is
    still writing) mid-append has not added the rest."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return 0
    try:
        size = end = os.fstat(fd).st_size
        while end > 0:
            start = max(0, end - _TAIL)
            data = os.pread(fd, end - start, start)
            newline = data.rfind(b"\n")
            if end == size and not data[newline + 1:].strip(b"\0"):
                return size  # a NUL tail is a compacted (consumed) prefix's end
            if newline >= 0:
                return start + newline + 1
            end = start
        return 0
    finally:
        os.close(fd)


def file_fingerprints(path: Path) -> set[bytes]:
    """The seen-filter fingerprints of every URL a frontier file holds (its compacted lines'
    too)."""
    return set(scan_file(path).fingerprints)


def scan_files(files: Iterable[DomainFile]) -> dict[str, FileScan]:
    """scan_file of whole files (run in a thread: it reads and hashes)."""
    return {f.domain: scan_file(f.path) for f in files}


def complete_ends(files: Iterable[DomainFile]) -> dict[str, int]:
    return {f.domain: complete_end(f.path) for f in files}


async def read_ahead(files: Sequence[DomainFile]) -> AsyncIterator[tuple[DomainFile, FileScan]]:
    """(file, scan) for every file, in order; a thread reads the next batch of files while
    the caller handles this one. A big file comes in parts, each with eof False but the last."""
    batches = _batches(files)
    pending: asyncio.Future[dict[str, FileScan]] | None = None
    try:
        for i, batch in enumerate(batches):
            scans = await (pending or asyncio.to_thread(scan_files, _small(batch)))
            pending = asyncio.ensure_future(asyncio.to_thread(scan_files, _small(batches[i + 1]))) \
                if i + 1 < len(batches) else None
            for domain_file in batch:
                scan = scans.get(domain_file.domain)
                if scan is not None:
                    yield domain_file, scan
                    continue
                start = 0
                while True:
                    scan = await asyncio.to_thread(scan_file, domain_file.path, start=start,
                                                   limit=BATCH_BYTES)
                    yield domain_file, scan
                    if scan.eof:
                        break
                    start = scan.end
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await pending


def _batches(files: Sequence[DomainFile]) -> list[list[DomainFile]]:
    batches: list[list[DomainFile]] = []
    batch: list[DomainFile] = []
    size = 0
    for domain_file in files:
        if batch and (size + domain_file.size > BATCH_BYTES or len(batch) >= _BATCH_FILES):
            batches.append(batch)
            batch, size = [], 0
        batch.append(domain_file)
        size += domain_file.size
    if batch:
        batches.append(batch)
    return batches


def _small(batch: list[DomainFile]) -> list[DomainFile]:
    """The files read whole in the batch's thread; bigger ones are read in parts."""
    return [f for f in batch if f.size <= BATCH_BYTES]


def _scan_lines(block: bytes, scan: FileScan) -> None:
    """Lines as FrontierFiles reads them: `url|depth|priority|added_at[|kind]`, else torn."""
    blake2b = hashlib.blake2b
    out = scan.fingerprints
    for line in block.split(b"\n"):
        line = line.lstrip(b"\0")  # the end of a compacted prefix
        if not line:
            continue
        parts = line.split(b"|")
        if len(parts) == 5 and parse_kind(parts[4]) is not None:  # an asset's line
            parts.pop()
        if len(parts) != 4 or not parts[0] or not _numbers(parts) or not _text(parts[0]):
            scan.torn_lines += 1
            continue
        scan.urls += 1
        out.append(blake2b(parts[0], digest_size=16).digest())


def _numbers(parts: list[bytes]) -> bool:
    try:
        int(parts[1]), float(parts[2]), int(parts[3])
    except ValueError:
        return False
    return True


def _text(url: bytes) -> bool:
    if url.isascii():
        return True
    try:
        url.decode()
    except UnicodeDecodeError:
        return False
    return True


def _first_line_domain(path: Path) -> str | None:
    """The domain key of the first whole URL line, if the file's name is that domain's."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        position = 0
        head = os.pread(fd, 1 << 20, position)
        while head[:1] == b"\0":  # past a compacted prefix
            position = past_consumed(fd, position, head)
            head = os.pread(fd, 1 << 20, position)
    except OSError:
        return None
    finally:
        os.close(fd)
    for line in head.split(b"\n")[:-1]:
        parts = line.split(b"|")
        if len(parts) not in (4, 5) or not _text(parts[0]):
            continue
        found = try_canonical_url_and_domain(parts[0].decode())
        if found is not None and frontier_file_name(found[1]) == path.name:
            return found[1]
    return None
