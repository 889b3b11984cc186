"""Segment files on disk: where the crawler leaves them, and their records with offsets.
(With an S3 primary the crawler uploads them to the bucket: segment_source.py.)

The crawler writes `sessions/{YYYY-MM-DD}/{session uuid}/{stamp}_{n}.jsonl` (a hidden temp
name until the file is whole, then an atomic link), and keeps the records of a segment not
yet written in `sessions/.journals/{session}.{generation}.journal`. Only names of that shape
are read; anything else under `sessions/` is left alone and reported by the caller. A file
whose last line has no newline was cut (a writer killed mid-write, or a copy cut short):
its records are read up to the last whole line and the rest is counted, never parsed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SEGMENT_NAME = re.compile(r"[0-9]{8}T[0-9]{12}Z_[0-9]{6,}\.jsonl")
JOURNAL_NAME = re.compile(r"([0-9a-f-]{36})\.[0-9]+\.journal")
JOURNALS = ".journals"
COMPACTED = "compacted"  # compacted sessions (`captures.compaction`)


@dataclass(frozen=True)
class SegmentPath:
    """A segment file: `relative` to the data dir (the ledger's key), its session and day."""

    root: Path  # the data dir
    relative: str
    session_id: str
    day: str

    @property
    def path(self) -> Path:
        return self.root / self.relative


@dataclass(frozen=True)
class SegmentBytes:
    """A segment's bytes as read once: `whole` is up to the last newline, `cut` what followed."""

    data: bytes
    sha256: str
    whole: int

    @property
    def cut_bytes(self) -> int:
        return len(self.data) - self.whole

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """(byte offset, line without its newline) of each whole, non-blank line."""
        data, end, start = self.data, self.whole, 0
        while start < end:
            stop = data.index(b"\n", start)
            if stop > start and not data[start:stop].isspace():
                yield start, data[start:stop]
            start = stop + 1


def canonical_session_id(value: str) -> str | None:
    """`value` if it is a UUID in the canonical lower-case form the crawler writes."""
    try:
        canonical = str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        return None
    return canonical if canonical == value else None


def find_segments(data_dir: Path, session_id: str | None = None) -> tuple[list[SegmentPath], list[str]]:
    """Every segment file under `data_dir/sessions` (of one session if given), in the order
    the crawler wrote them, and the entries skipped there (odd names, symlinks) as lines
    for the report. Symlinks are never followed: nothing outside the data dir is read."""
    sessions = data_dir / "sessions"
    found: list[SegmentPath] = []
    skipped: list[str] = []
    for day_entry in _scan(sessions):
        if day_entry.name in (JOURNALS, COMPACTED) or day_entry.name.startswith("."):
            continue
        if not is_date(day_entry.name) or not day_entry.is_dir(follow_symlinks=False):
            skipped.append(f"sessions/{day_entry.name}: not a YYYY-MM-DD folder")
            continue
        for session_entry in _scan(Path(day_entry.path)):
            rel_dir = f"sessions/{day_entry.name}/{session_entry.name}"
            if session_entry.name.startswith("."):
                continue
            if canonical_session_id(session_entry.name) is None \
                    or not session_entry.is_dir(follow_symlinks=False):
                skipped.append(f"{rel_dir}: not a session folder (a session id is a UUID)")
                continue
            if session_id is not None and session_entry.name != session_id:
                continue
            for entry in _scan(Path(session_entry.path)):
                if entry.name.startswith("."):
                    continue  # a writer's temp file
                if SEGMENT_NAME.fullmatch(entry.name) is None \
                        or not entry.is_file(follow_symlinks=False):
                    skipped.append(f"{rel_dir}/{entry.name}: not a segment file")
                    continue
                found.append(SegmentPath(data_dir, f"{rel_dir}/{entry.name}",
                                         session_entry.name, day_entry.name))
    found.sort(key=lambda s: (s.session_id, s.relative.rsplit("/", 1)[1], s.day))
    return found, skipped


def segment_days(data_dir: Path) -> list[str]:
    """The days (YYYY-MM-DD) with segment files under `data_dir/sessions`, oldest first."""
    return sorted({segment.day for segment in find_segments(data_dir)[0]})


def find_journals(data_dir: Path) -> list[Path]:
    """The crawler's journal files (records of segments not yet written)."""
    return [Path(entry.path) for entry in _scan(data_dir / "sessions" / JOURNALS)
            if JOURNAL_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)]


def read_segment(path: Path) -> SegmentBytes:
    """The file's bytes (opened without following a symlink), their sha256 and where the
    whole lines end."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    return SegmentBytes(data, hashlib.sha256(data).hexdigest(), data.rfind(b"\n") + 1)


def _scan(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as entries:
            return sorted(entries, key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []


def is_date(name: str) -> bool:
    """Whether `name` is a YYYY-MM-DD date."""
    try:
        return dt.date.fromisoformat(name).isoformat() == name
    except ValueError:
        return False
