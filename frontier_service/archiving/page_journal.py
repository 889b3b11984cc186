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
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from frontier_service.archiving.journal_files import JournalFiles
from frontier_service.archiving.page_index import PageIndexWriter, SegmentFile, iter_records, list_segments
from frontier_service.archiving.session_lock import dead_sessions

log = logging.getLogger(__name__)


def journal_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "sessions" / ".journals"


class IndexJournal(JournalFiles):
    """Append-only journal files of one session; not thread-safe (use from the event loop)."""

    def __init__(self, data_dir: Path, session_id: str) -> None:
        super().__init__(journal_dir(data_dir), session_id, ".journal")
        self._pending: list[bytes] = []
        self._rotated: list[Path] = []

    def buffer(self, line: bytes) -> None:
        self._pending.append(line)

    def sync(self) -> None:
        """Append what was buffered (one write): after this a crash cannot lose those records."""
        if self._pending:
            self.write(b"".join(self._pending))  # kept when it fails (a full disk): retried
            self._pending = []

    def rotate(self) -> None:
        """The segment being written takes every line so far: later lines go to a new file."""
        self.sync()
        self._rotated.append(self.path(self.next_generation()))

    def segment_written(self) -> None:
        """The rotated lines are in a segment now: drop their journal files."""
        while self._rotated:
            with contextlib.suppress(FileNotFoundError):
                self._rotated.pop(0).unlink()

    def close(self) -> None:
        """After the final segment: nothing is left to journal."""
        self.sync()
        self.close_file()
        self._rotated.append(self.path(self.generation))
        self.segment_written()
        self.unlock()


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
    for session_id in dead_sessions(directory):
        segment = _recover_session(Path(data_dir), directory, session_id)
        if segment is not None:
            written.append(segment)
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
