"""Frontier file compaction: the consumed prefix of a domain's file is freed on disk.

Offsets stay valid: a hole is punched (`fallocate(PUNCH_HOLE | KEEP_SIZE)`) over the bytes
before a line boundary that every recovery source has passed — the on-disk checkpoints
(what a Redis rebuild restarts from, merged over sessions) hold the lowest such offset. The
file keeps its size; its blocks up to the cut are freed and read back as NUL bytes, which
every reader skips as consumed. A punch is one system call that either happened or not,
and both leave only consumed bytes behind: a kill -9 at any point loses nothing.

A punched-out file keeps its inode (and its name) until the crawl's data dir goes: a
fully fetched domain costs one inode and at most one block (the punch stops at the last
line's end; past it, another process may be appending). Filesystems without hole punching are
left alone (said once): rewriting a file in place would move its offsets.

The seen filter of a rebuilt Redis is made from every URL line on disk, so the lines a
punch frees leave their 16-byte fingerprints behind in `{file}.seen` first: disk use
follows the unfetched frontier plus 16 bytes per consumed URL, and a rebuild still knows
every URL the crawl queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import errno
import functools
import hashlib
import logging
import os
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from frontier_service.counts import Counts
from frontier_service.frontier.checkpoint import DomainCheckpoint, checkpoint_dir, load_checkpoints
from frontier_service.frontier.frontier_files import FrontierFiles, past_consumed, walk

log = logging.getLogger(__name__)

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
DEFAULT_THRESHOLD = 64 << 10
SEEN_SUFFIX = ".seen"
_BACK = 64 << 10  # bytes read back from an offset to find its line's start
_CHUNK = 4 << 20

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_fallocate = _libc.fallocate
_fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
_fallocate.restype = ctypes.c_int


class PunchUnsupported(OSError):
    """The filesystem cannot punch holes."""


def punch_hole(fd: int, length: int) -> None:
    """Free the blocks of bytes [0, length) of `fd`'s file, keeping its size."""
    if length <= 0:
        return
    if _fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, length) != 0:
        code = ctypes.get_errno()
        if code in (errno.EOPNOTSUPP, errno.ENOSYS):
            raise PunchUnsupported(code, os.strerror(code))
        raise OSError(code, os.strerror(code))


def line_cut(fd: int, offset: int) -> int:
    """The greatest line boundary (0, or the byte just after a newline) at or before offset."""
    end = offset
    while end > 0:
        start = max(0, end - _BACK)
        newline = os.pread(fd, end - start, start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        end = start
    return 0


def allocated_bytes(fd: int, end: int) -> int:
    """Bytes of [0, end) that sit in allocated blocks (not in holes)."""
    total, pos = 0, 0
    while pos < end:
        try:
            data = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                break
            raise
        if data >= end:
            break
        hole = min(os.lseek(fd, data, os.SEEK_HOLE), end)
        total += hole - data
        pos = hole
    return total


@dataclass
class CompactionReport(Counts):
    """What one compaction pass did (or, with dry_run, would do)."""

    files: int = 0  # files punched (or punchable)
    bytes_punched: int = 0  # consumed bytes turned into holes (apparent bytes)
    bytes_freed: int = 0  # disk bytes freed (allocated blocks before minus after)
    fingerprints: int = 0  # seen-filter fingerprints of punched lines saved
    unsupported: int = 0  # files on a filesystem without hole punching
    errors: int = 0
    seconds: float = 0.0


@dataclass
class DiskUsage(Counts):
    """Frontier files' apparent size against the disk they occupy."""

    files: int = 0
    apparent_bytes: int = 0
    frontier_disk_bytes: int = 0  # st_blocks * 512, with the `.seen` companions
    seen_bytes: int = 0  # of which the companions' fingerprints of punched lines


def disk_usage(root: Path) -> DiskUsage:
    """Every frontier file's apparent bytes and allocated bytes under `root/frontiers`."""
    usage = DiskUsage()
    for _, path, size in walk(root):
        try:
            blocks = path.stat().st_blocks
        except FileNotFoundError:
            continue
        usage.files += 1
        usage.apparent_bytes += size
        usage.frontier_disk_bytes += blocks * 512
        try:
            seen = seen_path(path).stat()
        except FileNotFoundError:
            continue
        usage.seen_bytes += seen.st_size
        usage.frontier_disk_bytes += seen.st_blocks * 512
    return usage


class FrontierCompactor:
    """Punches the consumed prefixes of a crawl's frontier files, from its checkpoints.

    A pass first appends the fingerprints of the lines it will punch to each file's
    `.seen` companion (what a Redis rebuild refills the seen filter from), syncs them, then
    punches. A kill -9 between the two repeats the fingerprints (harmless), never loses one.
    Remembers how far each file was punched, so a pass punches only the files that moved
    `threshold` bytes since (or reached their end). One pass at a time.
    """

    def __init__(self, files: FrontierFiles, *, threshold: int = DEFAULT_THRESHOLD) -> None:
        self.files = files
        self.threshold = threshold
        self.punched: dict[str, int] = {}
        self.supported = True

    def compact(self, checkpoints: Mapping[str, DomainCheckpoint], *,
                dry_run: bool = False) -> CompactionReport:
        """Punch each domain's file up to the line boundary at or before its checkpoint."""
        started = time.monotonic()
        report = CompactionReport()
        cuts: list[tuple[str, int, int]] = []  # (domain, cut, last)
        for domain, checkpoint in checkpoints.items():
            last = self.punched.get(domain, 0)
            if checkpoint.offset <= last:
                continue
            try:
                cut = self._plan(domain, checkpoint.offset, last, report=report, dry_run=dry_run)
            except OSError as exc:
                report.errors += 1
                log.warning("compacting the frontier file of %s failed: %s", domain, exc)
                continue
            if cut > last:
                cuts.append((domain, cut, last))
        if cuts and not dry_run:
            _sync(self.files.base)  # the fingerprints are durable before their lines go
            self._punch(cuts, report)
        report.seconds = time.monotonic() - started
        return report

    def _plan(self, domain: str, offset: int, last: int, *, report: CompactionReport,
              dry_run: bool) -> int:
        """The cut for one file (its fingerprints saved unless dry_run); 0 if none."""
        path = self.files.path_for(domain)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return 0
        try:
            stat = os.fstat(fd)
            offset = min(offset, stat.st_size)
            if offset - last < self.threshold and offset < stat.st_size:
                return 0  # not worth a call yet (a fully consumed file always is)
            cut = line_cut(fd, offset)
            if cut <= last:
                return 0
            if dry_run:
                report.files += 1
                report.bytes_punched += cut - last
                report.bytes_freed += allocated_bytes(fd, cut - cut % max(stat.st_blksize, 1))
                return 0
            fingerprints = consumed_fingerprints(fd, cut)
        finally:
            os.close(fd)
        append_seen(seen_path(path), fingerprints)
        report.fingerprints += len(fingerprints) // 16
        return cut

    def _punch(self, cuts: list[tuple[str, int, int]], report: CompactionReport) -> None:
        for domain, cut, last in cuts:
            if not self.supported:
                return
            try:
                fd = os.open(self.files.path_for(domain), os.O_WRONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                blocks = os.fstat(fd).st_blocks
                punch_hole(fd, cut)
                report.bytes_freed += max(0, blocks - os.fstat(fd).st_blocks) * 512
            except PunchUnsupported as exc:
                self.supported = False
                report.unsupported += 1
                log.warning("frontier files are not compacted: their filesystem cannot punch "
                            "holes (%s)", exc)
                return
            except OSError as exc:
                report.errors += 1
                log.warning("compacting the frontier file of %s failed: %s", domain, exc)
                continue
            finally:
                os.close(fd)
            self.punched[domain] = cut
            report.files += 1
            report.bytes_punched += cut - last


def seen_path(frontier_path: Path) -> Path:
    """The companion file holding the seen-filter fingerprints of a file's punched lines."""
    return frontier_path.with_name(frontier_path.name + SEEN_SUFFIX)


def consumed_fingerprints(fd: int, cut: int) -> bytes:
    """The 16-byte fingerprints (as a rebuild makes them) of the URL lines in [0, cut) not
    yet punched: the part already punched reads as NUL bytes and is skipped."""
    out: list[bytes] = []
    blake2b = hashlib.blake2b
    pos, carry = 0, b""
    while pos < cut:
        data = os.pread(fd, min(_CHUNK, cut - pos), pos)
        if not data:
            break
        if not carry and data[:1] == b"\0":
            pos = past_consumed(fd, pos, data)
            continue
        pos += len(data)
        data = carry + data
        end = data.rfind(b"\n") + 1
        carry = data[end:]
        for line in data[:end].split(b"\n"):
            # url|depth|priority|added_at[|kind]; a torn line's stray fingerprint is harmless
            if line.count(b"|") in (3, 4):
                url = line.lstrip(b"\0").split(b"|", 1)[0]
                if url:
                    out.append(blake2b(url, digest_size=16).digest())
    return b"".join(out)


def append_seen(path: Path, fingerprints: bytes) -> None:
    """Append whole 16-byte records, first dropping a torn one a crash left at the end."""
    if not fingerprints:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size % 16:
            os.ftruncate(fd, size - size % 16)
        view = memoryview(fingerprints)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def read_seen(frontier_path: Path) -> list[bytes]:
    """The fingerprints saved for a frontier file's punched lines (a torn last one dropped)."""
    try:
        data = seen_path(frontier_path).read_bytes()
    except FileNotFoundError:
        return []
    return [data[i:i + 16] for i in range(0, len(data) - 15, 16)]


def _sync(path: Path) -> None:
    """syncfs of the filesystem holding `path` (one call for every file a pass wrote)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def compact_crawl(root: Path, crawl_name: str, *, threshold: int = 0,
                  dry_run: bool = False) -> CompactionReport:
    """One pass over a crawl's files from its on-disk checkpoints (what a rebuild uses)."""
    checkpoints = load_checkpoints(checkpoint_dir(root, crawl_name))
    files = FrontierFiles(root, max_open_files=64)
    try:
        return FrontierCompactor(files, threshold=threshold).compact(checkpoints, dry_run=dry_run)
    finally:
        files.close()


def in_part(domain: str, part: int, parts: int) -> bool:
    """Whether process `part` of `parts` compacts the domain's file (each file has one)."""
    return parts <= 1 or zlib.crc32(domain.encode()) % parts == part


def _pass(compactor: FrontierCompactor, directory: Path, *, part: int, parts: int) -> CompactionReport:
    checkpoints = load_checkpoints(directory)
    return compactor.compact({d: c for d, c in checkpoints.items() if in_part(d, part, parts)})


async def compact_periodically(files: FrontierFiles, directory: Path, *, threshold: int,
                               every_s: float, finished: asyncio.Event,
                               part: int = 0, parts: int = 1) -> None:
    """Every `every_s` until `finished`: a compaction pass in a thread from the checkpoints
    on disk in `directory` (never blocking the event loop; a failed pass is retried). Of
    several processes of a crawl, process `part` of `parts` compacts its share of files."""
    compactor = FrontierCompactor(files, threshold=threshold)
    while not finished.is_set() and compactor.supported:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(finished.wait(), every_s)
        try:
            report = await asyncio.to_thread(functools.partial(_pass, compactor, directory,
                                                               part=part, parts=parts))
        except Exception:
            log.exception("compacting the frontier files failed; retrying")
            continue
        if report.files:
            log.info("compacted %d frontier files: %d consumed bytes punched, %d disk bytes "
                     "freed in %.2f s", report.files, report.bytes_punched, report.bytes_freed,
                     report.seconds)
