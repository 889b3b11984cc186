"""Compaction of old crawl sessions: a session's segment files become one
zstd-compressed JSON-lines file plus an offset index, and its captures point into it.

`sessions/compacted/<session>.jsonl.zst` is a run of independent zstd frames of about
`FRAME_BYTES` of records each: decompressed whole it is the session's records in segment
order, one per line, exactly the bytes the segments held (a cut tail is not a record and is
left to the segment's blob). `<session>.idx` has one fixed-size entry per record (frame
offset, frame length, offset in the frame, line length), so a capture's record is one seek
and one frame to decompress; a capture's `record_offset` is then its record's ordinal.

Order of work, so that kill -9 anywhere and a rerun converge with no record lost:
1. write both files under temp names, fsync, read them back and compare every record with
   the segment it came from (bytes equal), then rename into place;
2. store both in the primary blob store, then one transaction: captures repointed, the
   session records its compacted file and index (one reference each), the segments' own
   blob references released (gc takes those copies after its grace);
3. only then delete the segment files from sessions/ (a rerun finishes deleting them).
A session still being crawled (a live crawler lock or a segment not yet ingested) is left.

With an S3 primary the segments are objects in the bucket (segment_source.py): they are read
from there, the compacted file and index are written in the local sessions/compacted/ as a
spool, checked, stored as blobs and as objects under the same names (what
`read_compacted_record` reads, two ranged GETs), and the local copies removed after the
commit; the segment objects go last. A crawler on another machine holds no lock here, so
such a session is also left until its newest segment object is older than the compaction age.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import zstandard

from archive_pipelines.blobstore.local_files import fsync_dir
from archive_pipelines.captures.segment_files import (
    COMPACTED,
    JOURNALS,
    SegmentBytes,
    find_journals,
)
from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.captures.segment_source import SegmentSource, segment_source
from archive_pipelines.catalog import Body, Catalog, SegmentLedgerRow, utcnow

FRAME_BYTES = 256 * 1024  # records per zstd frame: ~256 KiB decompressed
LEVEL = 9
_ENTRY = struct.Struct("<QIII")  # frame offset, frame length, offset in frame, line length
INDEX_MAGIC = b"APCIDX1\n"
ZST_MIME = "application/zstd"
INDEX_MIME = "application/octet-stream"


@dataclass
class SessionCompaction:
    session_id: str
    # compacted | finished (originals removed on a rerun) | skipped (`problems` say why) |
    # failed; in a dry run: would compact | would finish
    outcome: str
    segments: int = 0
    records: int = 0
    bytes_in: int = 0  # segment bytes read
    bytes_out: int = 0  # compacted file + index
    removed_files: int = 0
    problems: list[str] = field(default_factory=list)


@dataclass
class CompactionReport:
    sessions: list[SessionCompaction] = field(default_factory=list)

    @property
    def failed(self) -> list[SessionCompaction]:
        return [s for s in self.sessions if s.outcome == "failed"]

    def total(self, name: str) -> int:
        return sum(getattr(s, name) for s in self.sessions)

    def to_dict(self) -> dict[str, Any]:
        return {"sessions": [vars(s) for s in self.sessions],
                **{name: self.total(name) for name in
                   ("segments", "records", "bytes_in", "bytes_out", "removed_files")}}


class CompactionError(Exception):
    """A session that cannot be compacted as it is (the message says why): left unchanged."""


def compact_sessions(catalog: Catalog, store: CapturePrimary, data_dir: Path, *,
                     older_than: timedelta, session_id: str | None = None,
                     now: datetime | None = None, dry_run: bool = False,
                     on_session: Callable[[SessionCompaction], object] | None = None
                     ) -> CompactionReport:
    """Compact every session whose last fetch is older than `older_than` (or just
    `session_id`, if old enough), and finish the compactions a crash interrupted. Sessions
    left as they are, too young among them, are reported `skipped` with the reason.
    `dry_run` takes the same decisions and changes nothing."""
    cutoff = (now or utcnow()) - older_than
    source = segment_source(store.store, data_dir)
    with catalog.reading() as tx:
        candidates = tx.captures.compactable_sessions(ended_before=cutoff, session_id=session_id)
        young = tx.captures.young_sessions(ended_since=cutoff, session_id=session_id)
    report = CompactionReport()
    for sid, ended in young:
        last = "unknown" if ended is None else f"{ended:%Y-%m-%d %H:%M} UTC"
        report.sessions.append(SessionCompaction(sid, "skipped", problems=[
            f"last fetch {last}: younger than {_days(older_than)}"]))
    for sid, compacted_path in candidates:
        if compacted_path is not None:
            done = _finish(catalog, source, sid, dry_run=dry_run)
        else:
            done = _compact_one(catalog, store, source, session_id=sid, cutoff=cutoff,
                                dry_run=dry_run)
        if done.outcome != "skipped" or done.problems:
            report.sessions.append(done)
            if on_session is not None:
                on_session(done)
    return report


def _days(span: timedelta) -> str:
    """`7 days`, `1 day`, `2 hours` (a span under a day in hours)."""
    days = span.total_seconds() / 86_400
    if days >= 1 or days == 0:
        return f"{days:g} day{'' if days == 1 else 's'}"
    hours = round(days * 24, 2)
    return f"{hours:g} hour{'' if hours == 1 else 's'}"


def _compact_one(catalog: Catalog, store: CapturePrimary, source: SegmentSource,
                 *, session_id: str, cutoff: datetime, dry_run: bool = False) -> SessionCompaction:
    result = SessionCompaction(session_id, "skipped")
    data_dir = source.data_dir
    if _crawler_alive(data_dir, session_id):
        result.problems.append("a crawler is still writing this session: left for later")
        return result
    if any(path.name.startswith(f"{session_id}.") for path in find_journals(data_dir)):
        result.problems.append("the crawler's journal holds records not in a segment yet: "
                               "left for later (a crawler run recovers them)")
        return result
    on_disk, _skipped = source.find(session_id)
    if not source.is_local:
        newest = max((source.modified(s.relative) or cutoff for s in on_disk), default=cutoff)
        if newest > cutoff:
            result.problems.append(f"a segment was uploaded {newest:%Y-%m-%d %H:%M} UTC: a "
                                   "crawler may still be writing this session, left for later")
            return result
    with catalog.reading() as tx:
        ledger = tx.captures.segments_of_session(session_id)
    known = {row.path for row in ledger}
    if any(segment.relative not in known for segment in on_disk):
        result.problems.append("segments not yet ingested: run ingest-crawl first")
        return result
    if dry_run:
        result.outcome = "would compact"
        result.segments = len(on_disk)
        result.bytes_in = sum(source.size(segment.relative) or 0 for segment in on_disk)
        return result
    try:
        files = _write_compacted(source, session_id, ledger, result=result)
    except CompactionError as exc:
        result.outcome = "failed"
        result.problems.append(str(exc))
        return result
    zst_path, idx_path, offsets = files
    puts = [store.store.put_file(path) for path in (zst_path, idx_path)]
    for put in puts:
        store.farm.aliases.ensure(put.sha256, store.store.local_path(put.sha256))
    if not source.is_local:  # where readers find them by name, before captures point there
        for path in (zst_path, idx_path):
            source.store_file(_relative(data_dir, path), path)
    with catalog.transaction() as tx:
        tx.captures.record_compaction(session_id=session_id, compacted_path=_relative(data_dir, zst_path),
            compacted=Body(puts[0].sha256, puts[0].size, ZST_MIME),
            index=Body(puts[1].sha256, puts[1].size, INDEX_MIME),
            ordinals=offsets, primary_store_id=store.store_id, now=utcnow())
    result.outcome = "compacted"
    if not source.is_local:  # the local spool copies: the bucket holds them now
        for path in (zst_path, idx_path):
            path.unlink(missing_ok=True)
    result.removed_files = _remove_originals(source, ledger)
    return result


def _finish(catalog: Catalog, source: SegmentSource, session_id: str, *,
            dry_run: bool = False) -> SessionCompaction:
    """A compacted session whose originals a crash left behind: remove them now."""
    with catalog.reading() as tx:
        ledger = tx.captures.segments_of_session(session_id)
    if dry_run:
        left = sum(source.size(row.path) is not None for row in ledger)
        return SessionCompaction(session_id, "would finish" if left else "skipped",
                                 removed_files=left)
    removed = _remove_originals(source, ledger)
    return SessionCompaction(session_id, "finished" if removed else "skipped",
                             removed_files=removed)


def _write_compacted(source: SegmentSource, session_id: str, ledger: list[SegmentLedgerRow],
                     *, result: SessionCompaction
                     ) -> tuple[Path, Path, list[tuple[int, int, int]]]:
    """Write, check and publish the compacted file and its index; returns their paths and
    (segment id, byte offset in the segment, ordinal) of every record."""
    folder = source.data_dir / "sessions" / COMPACTED
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(f".{session_id}.*"):  # temp files of an interrupted run
        stale.unlink()
    temp_zst = folder / f".{session_id}.{os.getpid()}.zst.tmp"
    temp_idx = folder / f".{session_id}.{os.getpid()}.idx.tmp"
    try:
        offsets, lines = _write_temp_files(source, ledger, result, temp_zst=temp_zst,
                                           temp_idx=temp_idx)
        mismatch = _first_mismatch(temp_zst, temp_idx, lines)
        if mismatch is not None:
            raise CompactionError(f"the compacted file does not read back: {mismatch}")
    except BaseException:  # a session left as it was leaves no temp file behind either
        for temp in (temp_zst, temp_idx):
            temp.unlink(missing_ok=True)
        raise
    result.records = len(lines)
    final_zst = folder / f"{session_id}.jsonl.zst"
    final_idx = folder / f"{session_id}.idx"
    os.replace(temp_zst, final_zst)
    os.replace(temp_idx, final_idx)
    fsync_dir(folder)
    result.bytes_out = final_zst.stat().st_size + final_idx.stat().st_size
    return final_zst, final_idx, offsets


def _write_temp_files(source: SegmentSource, ledger: list[SegmentLedgerRow],
                      result: SessionCompaction,
                      *, temp_zst: Path, temp_idx: Path
                      ) -> tuple[list[tuple[int, int, int]], list[bytes]]:
    """Write the records of the session's segments to the temp files, fsynced; returns
    (segment id, byte offset in the segment, ordinal) of every record, and the records."""
    offsets: list[tuple[int, int, int]] = []
    lines: list[bytes] = []
    compressor = zstandard.ZstdCompressor(level=LEVEL, write_checksum=True)
    with open(temp_zst, "wb") as zst, open(temp_idx, "wb") as idx:
        idx.write(INDEX_MAGIC)
        frame: list[bytes] = []
        frame_bytes = 0

        def flush() -> None:
            nonlocal frame, frame_bytes
            if not frame:
                return
            data = compressor.compress(b"".join(frame))
            start = zst.tell()
            zst.write(data)
            inner = 0
            for line in frame:
                idx.write(_ENTRY.pack(start, len(data), inner, len(line)))
                inner += len(line)
            frame, frame_bytes = [], 0

        for row in ledger:
            content = _segment_bytes(source, row)
            result.segments += 1
            result.bytes_in += len(content.data)
            for offset, line in content.lines():
                record = line + b"\n"
                offsets.append((row.id, offset, len(lines)))
                lines.append(record)
                frame.append(record)
                frame_bytes += len(record)
                if frame_bytes >= FRAME_BYTES:
                    flush()
        flush()
        zst.flush()
        idx.flush()
        os.fsync(zst.fileno())
        os.fsync(idx.fileno())
    return offsets, lines


def _segment_bytes(source: SegmentSource, row: SegmentLedgerRow) -> SegmentBytes:
    """A segment's bytes, checked against the ledger's sha256."""
    try:
        content = source.read(row.path)
    except FileNotFoundError:
        raise CompactionError(f"{row.path} is missing (ingested, not compacted)") from None
    if content.sha256 != row.sha256:
        raise CompactionError(f"{row.path} changed since it was ingested "
                              f"(sha256 {content.sha256}, ledger {row.sha256})")
    return content


def _first_mismatch(zst: Path, idx: Path, lines: list[bytes]) -> str | None:
    """Read every record back through the index; the first difference, or None."""
    entries = list(iter_index(idx))
    if len(entries) != len(lines):
        return f"{len(entries)} index entries for {len(lines)} records"
    decompressor = zstandard.ZstdDecompressor()
    with open(zst, "rb") as handle:
        frames: dict[int, bytes] = {}
        for ordinal, ((start, length, inner, size), line) in enumerate(zip(entries, lines,
                                                                            strict=True)):
            if start not in frames:
                frames.clear()
                handle.seek(start)
                frames[start] = decompressor.decompress(handle.read(length))
            if frames[start][inner:inner + size] != line:
                return f"record {ordinal} differs"
    with open(zst, "rb") as handle:  # and the file decompresses whole to the same lines
        whole = decompressor.stream_reader(handle, read_across_frames=True).read()
    if hashlib.sha256(whole).digest() != hashlib.sha256(b"".join(lines)).digest():
        return "the file does not decompress to the records in order"
    return None


def iter_index(idx: Path) -> Iterator[tuple[int, int, int, int]]:
    """(frame offset, frame length, offset in frame, line length) of each record."""
    with open(idx, "rb") as handle:
        if handle.read(len(INDEX_MAGIC)) != INDEX_MAGIC:
            raise CompactionError(f"{idx} is not a compacted-session index")
        while chunk := handle.read(_ENTRY.size * 4096):
            yield from _ENTRY.iter_unpack(chunk)


def read_compacted_record(data_dir: Path, compacted_path: str, ordinal: int, *,
                          source: SegmentSource | None = None) -> bytes:
    """The record line (without newline) at `ordinal` of a compacted session file (read
    through `source` when given and not local: two ranged reads, the entry then its frame)."""
    if source is not None and not source.is_local:
        return _read_compacted_remote(source, compacted_path, ordinal)
    zst = data_dir / compacted_path
    idx = zst.with_name(zst.name.removesuffix(".jsonl.zst") + ".idx")
    with open(idx, "rb") as handle:
        handle.seek(len(INDEX_MAGIC) + ordinal * _ENTRY.size)
        entry = handle.read(_ENTRY.size)
    if len(entry) != _ENTRY.size:
        raise CompactionError(f"{compacted_path} has no record {ordinal}")
    start, length, inner, size = _ENTRY.unpack(entry)
    with open(zst, "rb") as handle:
        handle.seek(start)
        frame = zstandard.ZstdDecompressor().decompress(handle.read(length))
    return frame[inner:inner + size].rstrip(b"\n")


def _read_compacted_remote(source: SegmentSource, compacted_path: str, ordinal: int) -> bytes:
    idx = compacted_path.removesuffix(".jsonl.zst") + ".idx"
    entry = source.read_range(idx, len(INDEX_MAGIC) + ordinal * _ENTRY.size, _ENTRY.size)
    if len(entry) != _ENTRY.size:
        raise CompactionError(f"{compacted_path} has no record {ordinal}")
    start, length, inner, size = _ENTRY.unpack(entry)
    frame = zstandard.ZstdDecompressor().decompress(source.read_range(compacted_path, start,
                                                                      length))
    return frame[inner:inner + size].rstrip(b"\n")


def _remove_originals(source: SegmentSource, ledger: list[SegmentLedgerRow]) -> int:
    """Delete the compacted session's segment files (the crawler's, and now held by the
    verified compacted file), then the folders they leave empty."""
    if not source.is_local:
        return sum(source.remove(row.path) for row in ledger)
    data_dir = source.data_dir
    removed = 0
    folders = set()
    for row in ledger:
        path = data_dir / row.path
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed += 1
        folders.add(path.parent)
    for folder in folders:
        with contextlib.suppress(OSError):  # not empty (a file we do not know): kept
            folder.rmdir()
    return removed


def _crawler_alive(data_dir: Path, session_id: str) -> bool:
    """Whether a crawler holds the session's lock (`sessions/.journals/<id>.lock`)."""
    lock = data_dir / "sessions" / JOURNALS / f"{session_id}.lock"
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _relative(data_dir: Path, path: Path) -> str:
    return path.relative_to(data_dir).as_posix()

