"""The record behind a capture, wherever it lies now: a segment file (`record_offset` is a
byte offset) or a compacted session file (`record_offset` is the record's ordinal)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from archive_pipelines.captures.compaction import read_compacted_record
from archive_pipelines.captures.segment_source import SegmentSource

_MAX_RECORD = 64 * 1024 * 1024


def read_record(data_dir: Path, index_path: str, record_offset: int, *,
                source: SegmentSource | None = None) -> dict[str, Any]:
    """The page-fetch record (a dict) a capture came from, in the data dir or in `source`
    (an S3 primary's bucket). OSError / ValueError when the file is gone or does not hold
    a record there."""
    if index_path.startswith("/") or ".." in index_path.split("/"):
        raise ValueError(f"{index_path!r} is not a path inside the data dir")
    if index_path.endswith(".jsonl.zst"):
        line = read_compacted_record(data_dir, index_path, record_offset, source=source)
    elif source is not None and not source.is_local:
        line = _remote_segment_line(source, index_path, record_offset)
    else:
        line = _segment_line(os.path.join(data_dir, index_path), record_offset)
    record = json.loads(line)
    if not isinstance(record, dict):
        raise ValueError(f"{index_path} at {record_offset} is not a record")
    return record


def _segment_line(path: str, offset: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        handle.seek(offset)
        line = handle.readline(_MAX_RECORD)
    if not line.endswith(b"\n"):
        raise ValueError(f"{path} has no whole record at byte {offset}")
    return line


def _remote_segment_line(source: SegmentSource, relative: str, offset: int) -> bytes:
    """The record at `offset` of a segment object: ranged reads, growing until a newline."""
    want = 64 * 1024
    while want <= _MAX_RECORD:
        data = source.read_range(relative, offset, want)
        end = data.find(b"\n")
        if end >= 0:
            return data[:end + 1]
        if len(data) < want:
            break
        want *= 4
    raise ValueError(f"{relative} has no whole record at byte {offset}")
