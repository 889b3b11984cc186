"""Page-fetch index segments: batches of records as JSON lines under sessions/{date}/{session_id}/.

Why JSON lines per segment rather than one file per page: a crawl writes
millions of pages, and a file per page means millions of inodes, a create + fsync +
rename per page, and directories too large to list or back up. A segment of ~1000
records is one file, one fsync and one atomic rename, and it is also the unit reported
to Dagster (`crawl_segments`). Each line is exactly one page record (page_record.py).

A segment is written to a hidden temp name (`.NAME.PID.tmp`), fsynced, then linked to
its final name (never replacing an existing segment); readers list only `*.jsonl`, so a
half-written segment is never visible.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEGMENT_SUFFIX = ".jsonl"


@dataclass(frozen=True)
class SegmentFile:
    """A segment as written."""

    path: Path
    records: int
    bytes: int
    date: str  # YYYY-MM-DD (UTC), the directory's date and the Dagster partition


def validate_session_id(session_id: str) -> str:
    """The session id in canonical uuid form; ValueError for anything else (no path tricks)."""
    try:
        canonical = str(uuid.UUID(session_id))
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"session id must be a UUID, got {session_id!r}") from exc
    if canonical != session_id.lower():  # uuid.UUID also accepts braces and "urn:uuid:"
        raise ValueError(f"session id must be a UUID in canonical form, got {session_id!r}")
    return canonical


class PageIndexWriter:
    """Buffers page-fetch records and writes them as one segment file per flush.

    Not thread-safe: call `add` and `detach` from the event loop, and `write_segment`
    (blocking I/O) from a worker thread with the detached lines.
    """

    def __init__(self, data_dir: Path | str, session_id: str) -> None:
        self.root = Path(data_dir).resolve()
        self.session_id = validate_session_id(session_id)
        self._lines: list[bytes] = []
        self._segment_no = 0

    def session_dir(self, date: str) -> Path:
        """`{data_dir}/sessions/{date}/{session_id}`, checked to lie inside the data dir."""
        day = dt.date.fromisoformat(date).isoformat()
        directory = self.root / "sessions" / day / self.session_id
        if not directory.resolve().is_relative_to(self.root):
            raise ValueError(f"{directory} is outside the data dir {self.root}")
        return directory

    def add(self, record: Mapping[str, Any]) -> bytes:
        """Buffer one record (encoded now, so later changes to the mapping do not leak in).

        Returns the encoded line (a journal may keep a copy until the segment is written).
        """
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        line = text.encode("utf-8", errors="surrogatepass") + b"\n"
        self._lines.append(line)
        return line

    @property
    def pending(self) -> int:
        """Records buffered since the last detach."""
        return len(self._lines)

    def detach(self) -> list[bytes]:
        """Take the buffered lines, leaving the buffer empty."""
        lines, self._lines = self._lines, []
        return lines

    def flush(self, now: float | None = None) -> SegmentFile | None:
        """Write everything buffered as one segment; None if nothing was buffered."""
        return self.write_segment(self.detach(), now)

    def write_segment(self, lines: Sequence[bytes], now: float | None = None) -> SegmentFile | None:
        """Write `lines` (from `detach`) atomically as the next segment; blocking I/O."""
        if not lines:
            return None
        moment = dt.datetime.fromtimestamp(time.time() if now is None else now, dt.UTC)
        date = moment.date().isoformat()
        directory = self.session_dir(date)
        directory.mkdir(parents=True, exist_ok=True)
        stamp = moment.strftime("%Y%m%dT%H%M%S%fZ")
        self._segment_no += 1
        temp = directory / f".{stamp}_{self._segment_no:06d}.{os.getpid()}.tmp"
        try:
            with open(temp, "xb") as target:
                target.writelines(lines)
                target.flush()
                os.fsync(target.fileno())
            final = self._publish(temp, directory, stamp)
        finally:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
        _fsync_dir(directory)
        return SegmentFile(final, len(lines), sum(map(len, lines)), date)

    def _publish(self, temp: Path, directory: Path, stamp: str) -> Path:
        """Hard-link the temp file to the first free segment name (never overwrites)."""
        while True:
            final = directory / f"{stamp}_{self._segment_no:06d}{SEGMENT_SUFFIX}"
            try:
                os.link(temp, final)
                return final
            except FileExistsError:  # a restarted writer of the same session reuses numbers
                self._segment_no += 1


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def list_segments(path: Path | str) -> list[Path]:
    """Finished segment files under `path` (a session dir or any parent), in name order."""
    root = Path(path)
    if root.is_file():
        return [root]
    found = (p for p in root.rglob(f"*{SEGMENT_SUFFIX}") if not p.name.startswith("."))
    return sorted(found, key=lambda p: (p.parent, p.name))


def iter_records(path: Path | str) -> Iterator[dict[str, Any]]:
    """Every record in a segment file, or in every finished segment under a directory."""
    for segment in list_segments(path):
        with open(segment, encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    yield json.loads(line)
