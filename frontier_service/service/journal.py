"""A journal of page-index records not yet in a segment, so kill -9 loses no record.

Segments are written every N pages or T seconds; until then records live in memory. The
crawler releases a domain's read offset only after its records reached this journal
(`sessions/.journals/{session}.{generation}.journal`, JSON lines appended with one write
per checkpoint), so a crash can never leave a URL consumed without its record. When a
segment closes the journal rotates; once the segment is on disk the old file is removed.
A later process turns the journals of dead sessions into segments (`recover_journals`);
a live session holds an flock on `{session}.lock`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from frontier_service.archiving.page_index import PageIndexWriter, SegmentFile, iter_records, list_segments
from frontier_service.service.session_lock import lock_session

log = logging.getLogger(__name__)


def journal_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "sessions" / ".journals"


class IndexJournal:
    """Append-only journal files of one session; not thread-safe (use from the event loop)."""

    def __init__(self, data_dir: Path, session_id: str) -> None:
        self.directory = journal_dir(data_dir)
        self.session_id = session_id
        self._lock: IO[str] = lock_session(self.directory, session_id)
        self._generation = 0
        self._pending: list[bytes] = []
        self._fd = self._open(0)
        self._rotated: list[Path] = []

    def path(self, generation: int) -> Path:
        return self.directory / f"{self.session_id}.{generation:06d}.journal"

    def buffer(self, line: bytes) -> None:
        self._pending.append(line)

    def sync(self) -> None:
        """Append what was buffered (one write): after this a crash cannot lose those records."""
        if self._pending:
            data, self._pending = b"".join(self._pending), []
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]

    def rotate(self) -> None:
        """The segment being written takes every line so far: later lines go to a new file."""
        self.sync()
        os.close(self._fd)
        self._rotated.append(self.path(self._generation))
        self._generation += 1
        self._fd = self._open(self._generation)

    def segment_written(self) -> None:
        """The rotated lines are in a segment now: drop their journal files."""
        while self._rotated:
            with contextlib.suppress(FileNotFoundError):
                self._rotated.pop(0).unlink()

    def close(self) -> None:
        """After the final segment: nothing is left to journal."""
        self.sync()
        os.close(self._fd)
        self._rotated.append(self.path(self._generation))
        self.segment_written()
        with contextlib.suppress(FileNotFoundError):
            (self.directory / f"{self.session_id}.lock").unlink()
        self._lock.close()

    def _open(self, generation: int) -> int:
        return os.open(self.path(generation), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                       0o644)


class JournaledIndexWriter(PageIndexWriter):
    """A PageIndexWriter whose records also go to an IndexJournal until their segment is written."""

    def __init__(self, data_dir: Path, session_id: str) -> None:
        super().__init__(data_dir, session_id)
        self.journal = IndexJournal(self.root, self.session_id)

    def add(self, record: Any) -> bytes:
        line = super().add(record)
        self.journal.buffer(line)
        return line

    def detach(self) -> list[bytes]:
        lines = super().detach()
        self.journal.rotate()
        return lines

    def write_segment(self, lines: Sequence[bytes], now: float | None = None) -> SegmentFile | None:
        segment = super().write_segment(lines, now)
        self.journal.segment_written()  # a list pop and unlinks: safe from the writer's thread
        return segment


def recover_journals(data_dir: Path) -> list[SegmentFile]:
    """Turn the journals of dead sessions into segments (records already in one are skipped)."""
    directory = journal_dir(data_dir)
    if not directory.is_dir():
        return []
    written = []
    for lock_path in sorted(directory.glob("*.lock")):
        session_id = lock_path.name.removesuffix(".lock")
        with open(lock_path, "a") as lock:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live process owns this session
            segment = _recover_session(Path(data_dir), directory, session_id)
            if segment is not None:
                written.append(segment)
            lock_path.unlink()
    return written


def _recover_session(data_dir: Path, directory: Path, session_id: str) -> SegmentFile | None:
    journals = sorted(directory.glob(f"{session_id}.*.journal"))
    writer = PageIndexWriter(data_dir, session_id)
    already = _navigation_ids(data_dir, session_id)
    lines = []
    for journal in journals:
        for line in journal.read_bytes().splitlines(keepends=True):
            record = _parse(line)
            if record is not None and record.get("navigation_id") not in already:
                lines.append(line)
    segment = writer.write_segment(lines) if lines else None
    for journal in journals:
        journal.unlink()
    if segment is not None:
        log.info("recovered %d page-index records of session %s into %s",
                 segment.records, session_id, segment.path)
    return segment


def _navigation_ids(data_dir: Path, session_id: str) -> set[str]:
    """Navigation ids in the session's last two segments (a journal overlaps only those)."""
    segments = sorted((p for d in data_dir.glob(f"sessions/*/{session_id}") for p in list_segments(d)),
                      key=lambda p: p.name)
    ids: set[str] = set()
    for segment in segments[-2:]:
        ids.update(str(r.get("navigation_id")) for r in iter_records(segment))
    return ids


def _parse(line: bytes) -> dict[str, Any] | None:
    if not line.endswith(b"\n"):
        return None  # torn by the crash
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None
