"""CDXJ index lines, as cdxj-indexer writes them by default, and their sort.

A CDXJ line is `<SURT key> <14-digit timestamp> <JSON>`; pywb, ReplayWeb.page and WACZ read
it. The JSON matches cdxj-indexer 1.5's default output key for key: `url`, `mime`, `status`,
`digest`, `length`, `offset`, `filename` in that order, every value a string, a key left out
when the record has no such value (no HTTP status on a metadata record, no `Content-Type`).

Which records it indexes by default: `response`, `revisit`, `resource` and `metadata`, but not
a `resource` or `metadata` record of `Content-Type: application/warc-fields`; never `request`
or `warcinfo` records (`indexed_record`). A revisit's `mime` is `warc/revisit` (`record_mime`).
A record without a `WARC-Payload-Digest` is indexed with the digest cdxj-indexer computes for
it, `sha1:<base32>` of the payload; the caller passes it (revisits have none).
"""

from __future__ import annotations

import heapq
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from archive_pipelines.surt import surt

_INDEXED_TYPES = frozenset({"response", "revisit", "resource", "metadata"})
_FIELDS_TYPE = "application/warc-fields"
_MIME_END = re.compile(r"[;\s]")
_TIMESTAMP = re.compile(r"^[0-9]{14}$")
# How many sorted runs one merge pass reads at once (open files).
_MERGE_FAN_IN = 64


@dataclass(frozen=True)
class IndexEntry:
    """One indexed WARC record: where it is (file, offset, gzip member length) and what it holds."""

    url: str  # WARC-Target-URI
    timestamp: str  # WARC-Date as YYYYMMDDhhmmss (cdxj_timestamp)
    mime: str | None  # record_mime: the HTTP Content-Type's type, or warc/revisit
    status: int | None  # the HTTP status of a response or revisit with HTTP headers
    digest: str | None  # WARC-Payload-Digest as written, e.g. sha1:<base32> or sha256:<base32>
    length: int  # the record's length in the file (its gzip member)
    offset: int  # where the record starts in the file
    filename: str  # the WARC's file name (inside a WACZ: its name under archive/)

    def __post_init__(self) -> None:
        if not _TIMESTAMP.match(self.timestamp):
            raise ValueError(f"a CDXJ timestamp is 14 digits (YYYYMMDDhhmmss), not {self.timestamp!r}")
        if self.length < 0 or self.offset < 0:
            raise ValueError("a record's offset and length are never negative")


def cdxj_line(entry: IndexEntry) -> str:
    """The CDXJ line of `entry`, without its line break."""
    fields: dict[str, str] = {"url": entry.url}
    if entry.mime is not None:
        fields["mime"] = entry.mime
    if entry.status is not None:
        fields["status"] = str(entry.status)
    if entry.digest is not None:
        fields["digest"] = entry.digest
    fields["length"] = str(entry.length)
    fields["offset"] = str(entry.offset)
    fields["filename"] = entry.filename
    return f"{surt(entry.url)} {entry.timestamp} {json.dumps(fields)}"


def cdxj_timestamp(when: datetime) -> str:
    """The 14-digit timestamp of a WARC-Date (UTC; fractions of a second dropped)."""
    if when.tzinfo is not None:
        when = when.astimezone(UTC)
    return when.strftime("%Y%m%d%H%M%S")


def indexed_record(record_type: str, content_type: str | None) -> bool:
    """Whether cdxj-indexer's default indexes a record (`content_type`: the record's own)."""
    if record_type not in _INDEXED_TYPES:
        return False
    return not (record_type in ("resource", "metadata") and content_type == _FIELDS_TYPE)


def record_mime(record_type: str, content_type: str | None) -> str | None:
    """The `mime` field: `warc/revisit` for a revisit, else the Content-Type up to `;` or a space.

    `content_type` is the HTTP header's for a response, the record's own for the other types.
    """
    if record_type == "revisit":
        return "warc/revisit"
    if content_type is None:
        return None
    return _MIME_END.split(content_type, maxsplit=1)[0].strip()


def sort_cdxj(unsorted: Path, out: Path, *, chunk_lines: int = 200_000) -> int:
    """Sort a CDXJ file by bytes (as `LC_ALL=C sort`, duplicates kept); return its line count.

    An external merge sort: runs of `chunk_lines` lines are sorted in memory and written beside
    `out`, then merged (at most 64 at a time), so memory stays flat for any number of lines.
    `out` appears whole or not at all (written to a temporary name, then renamed).
    """
    if chunk_lines < 1:
        raise ValueError("chunk_lines must be at least 1")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".cdxj-sort-") as work:
        runs, count = _sorted_runs(unsorted, Path(work), chunk_lines=chunk_lines)
        generation = 0
        while len(runs) > _MERGE_FAN_IN:
            generation += 1
            runs = [
                _merge_runs(runs[start:start + _MERGE_FAN_IN], Path(work) / f"merge-{generation}-{start}")
                for start in range(0, len(runs), _MERGE_FAN_IN)
            ]
        partial = Path(work) / "sorted"
        _merge_runs(runs, partial)
        os.replace(partial, out)
    return count


def _sorted_runs(unsorted: Path, work: Path, *, chunk_lines: int) -> tuple[list[Path], int]:
    runs: list[Path] = []
    count = 0
    with unsorted.open("rb") as source:
        while True:
            chunk = [_terminated(line) for _, line in zip(range(chunk_lines), source, strict=False)]
            if not chunk:
                break
            count += len(chunk)
            chunk.sort(key=_line_key)
            run = work / f"run-{len(runs)}"
            with run.open("wb") as sink:
                sink.writelines(chunk)
            runs.append(run)
    return runs, count


def _merge_runs(runs: list[Path], merged: Path) -> Path:
    with ExitStack() as stack, merged.open("wb") as sink:
        sources: list[Iterable[bytes]] = [stack.enter_context(run.open("rb")) for run in runs]
        sink.writelines(_merged(sources))
    for run in runs:
        run.unlink()
    return merged


def _merged(sources: list[Iterable[bytes]]) -> Iterator[bytes]:
    return heapq.merge(*sources, key=_line_key)


def _line_key(line: bytes) -> bytes:
    """A line without its break: `sort` compares `a` < `a b`, whatever follows."""
    return line[:-1]


def _terminated(line: bytes) -> bytes:
    return line if line.endswith(b"\n") else line + b"\n"
