"""The records of a WARC file as anyone writes it, read with warcio, each with its place in the
file; a broken stretch is reported and stepped over, never the end of the file's import.

Three layouts: one gzip member per record (the norm: a record is found by its offset in the
file), plain (uncompressed: the same), and one gzip stream over the whole file (offsets are
then in the decompressed stream: reading a record later means decompressing up to it).

On a record that cannot be read (a truncated gzip member, a header that does not parse, a
Content-Length that runs past the record) the reader yields a `BrokenSpan` with the offset
and the reason, then looks for the next record start after it (a gzip member that opens
with `WARC/`, or a `WARC/1.` line) and goes on from there.
"""

from __future__ import annotations

import gzip
import io
import logging
import os
import zlib
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord

from archive_pipelines.warc.header_blocks import parse_block

_GZIP_MAGIC = b"\x1f\x8b\x08"
_SCAN = 1024 * 1024
_HEAD = 256 * 1024  # the first record's header is in its first 256 KiB, or it is no WARC
# What warcio raises on input it cannot parse (a header without a value reaches its code as
# None: AttributeError/TypeError), besides the errors of gzip and of the data.
READ_ERRORS = (ArchiveLoadFailed, zlib.error, EOFError, ValueError, gzip.BadGzipFile,
               UnicodeDecodeError, AttributeError, TypeError, IndexError, KeyError,
               OverflowError)


class Layout(StrEnum):
    RECORD_GZIP = "records-gzip"  # one gzip member per record
    WHOLE_GZIP = "whole-gzip"  # one gzip stream over the whole file
    PLAIN = "plain"


class _Iterator(ArchiveIterator):
    """warcio's iterator, without its warning on stderr when a record is not followed by
    blank lines (counted in `err_count`, which the reader turns into a report), with the
    WARC header lines kept as they were read (`header_lines`): warcio's parser joins a folded
    line, ends a field at a bare line feed and rewrites spaces in the target URI, silently;
    and its WARC and HTTP response header blocks parsed from the reader's buffer
    (`header_blocks`: the same result, without a Python read per line)."""

    INC_RECORD = ""

    def __init__(self, *args: Any, http_requests: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_lines: list[bytes] = []
        if not http_requests:  # a request record's HTTP header left unparsed (its bytes stay)
            loader = self.loader
            load = loader.load_http_headers

            def load_but_requests(rec_type: str, *args: Any) -> Any:
                return None if rec_type == "request" else load(rec_type, *args)

            loader.load_http_headers = load_but_requests
        loader = self.loader
        warc_parser, http_parser = loader.warc_parser, loader.http_parser

        def keep_lines(lines: list[bytes]) -> None:
            self.header_lines = lines

        def parse_warc(stream: Any, full_statusline: Any = None) -> Any:
            return parse_block(warc_parser, stream, full_statusline, sink=keep_lines)

        def parse_http(stream: Any, full_statusline: Any = None) -> Any:
            return parse_block(http_parser, stream, full_statusline)

        warc_parser.parse = parse_warc
        http_parser.parse = parse_http


@dataclass
class FoundRecord:
    """A record and where it starts (its stream is valid until the next one is asked for).
    `header_problem`: its WARC header block as written is malformed in a way warcio's parser
    hides (a bare line feed or a folded line: a field's value may have been cut or joined)."""

    offset: int
    record: ArcWarcRecord
    header_problem: str | None = None


@dataclass(frozen=True)
class BrokenSpan:
    """A stretch that holds no readable record: where it starts and why."""

    offset: int
    reason: str


def detect_layout(path: Path) -> Layout:
    """How `path` is compressed: plain, gzip per record, or gzip over the whole file (its
    first gzip member holds more than its first record)."""
    with open(path, "rb") as handle:
        head = handle.read(3)
        if head != _GZIP_MAGIC:
            return Layout.PLAIN
        handle.seek(0)
        inflate = zlib.decompressobj(31)
        produced = 0
        first = b""
        while not inflate.eof:
            chunk = handle.read(_SCAN)
            if not chunk:
                break
            while chunk and not inflate.eof:
                out = inflate.decompress(chunk, _SCAN)
                chunk = inflate.unconsumed_tail
                produced += len(out)
                if len(first) < _HEAD:
                    first += out[:_HEAD - len(first)]
    return Layout.RECORD_GZIP if produced == _first_record_length(first) else Layout.WHOLE_GZIP


def _first_record_length(head: bytes) -> int | None:
    """Header + Content-Length + the two CRLFs of the record at the start of `head`."""
    end = head.find(b"\r\n\r\n")
    if end < 0:
        return None
    for line in head[:end].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return end + 4 + int(value.strip()) + 4
            except ValueError:
                return None
    return None


@contextmanager
def open_layout(path: Path, layout: Layout) -> Iterator[BinaryIO]:
    """The file as the reader reads it: as it is, or decompressed (whole-file gzip)."""
    if layout is Layout.WHOLE_GZIP:
        with gzip.open(path, "rb") as stream:
            yield stream  # type: ignore[misc]
    else:
        with open(path, "rb") as stream:
            yield stream


RecordItems = Generator[FoundRecord | BrokenSpan, None, None]


def iter_records(path: Path, layout: Layout, *, start: int = 0,
                 http_requests: bool = True) -> RecordItems:
    """Every record from offset `start` on, and every broken stretch (see the module
    docstring). A record's stream must be read (or left) before the next item is asked for.
    `http_requests` False: request records come without their HTTP header parsed (an import
    reads none of them: a third of the parsing of a typical WARC saved)."""
    with open_layout(path, layout) as stream:
        position: int | None = start
        while position is not None:
            stream.seek(position)
            position = yield from _run(stream, layout, position, http_requests=http_requests)


def _run(stream: BinaryIO, layout: Layout, start: int, *, http_requests: bool
         ) -> Generator[FoundRecord | BrokenSpan, None, int | None]:
    """Records from `start` until the end (None) or a broken stretch (where to go on)."""
    iterator = _Iterator(stream, check_digests=False,  # the import checks payloads
                         http_requests=http_requests)
    records = iter(iterator)
    offset = start
    try:
        while True:
            record = next(records, None)
            if record is None:
                break
            offset = iterator.offset
            errors = iterator.err_count
            yield FoundRecord(offset, record, _header_problem(iterator.header_lines))
            iterator.read_to_end()
            missing = getattr(record.raw_stream, "limit", 0) or 0
            if missing > 0:
                yield BrokenSpan(offset, f"the record ends {missing:,} bytes short of its "
                                         "Content-Length (cut short)")
                return _resync(stream, layout, offset + 1)
            if iterator.err_count > errors:
                yield BrokenSpan(offset, "the record does not end where its Content-Length "
                                         "says (bytes follow it that are no next record)")
                return _resync(stream, layout, offset + 1)
    except READ_ERRORS as exc:
        failed = max(offset, getattr(iterator, "offset", offset))
        yield BrokenSpan(failed, f"unreadable: {_reason(exc)}")
        return _resync(stream, layout, failed + 1)
    if layout is not Layout.WHOLE_GZIP:
        size = os.fstat(stream.fileno()).st_size
        if iterator.offset < size:  # warcio stops quietly at some broken gzip members
            yield BrokenSpan(offset, f"reading stopped at byte {iterator.offset:,} of {size:,} "
                                     "(a gzip member cut short?)")
            return _resync(stream, layout, offset + 1)
    return None


def record_in(data: bytes, *, offset: int) -> FoundRecord:
    """The record at the start of `data` (a plain record's bytes: at least its header blocks,
    its payload may be cut short), found at `offset` of its file. A record's headers read
    without its file (a ranged read of a stored WARC). ValueError when none starts there."""
    iterator = _Iterator(io.BytesIO(data), check_digests=False)
    try:
        record = next(iter(iterator), None)
    except READ_ERRORS as exc:
        raise ValueError(f"no readable record at {offset}: {_reason(exc)}") from None
    if record is None:
        raise ValueError(f"no record at {offset}")
    return FoundRecord(offset, record, _header_problem(iterator.header_lines))


def _header_problem(lines: list[bytes]) -> str | None:
    """What is wrong with a WARC header block as written (its lines as read), if anything.
    Most blocks are fine: three searches over the joined block say so; only a block they
    find suspect is looked at line by line."""
    try:
        block = b"".join(lines)
    except TypeError:  # a status line given as text
        return _line_problem(lines)
    if (block.count(b"\n") == block.count(b"\r\n") and b"\n " not in block
            and b"\n\t" not in block):
        start = block.lower().find(b"\nwarc-target-uri:")
        if start < 0:
            return None
        end = block.find(b"\n", start + 1)
        if len(block[start + 17:end].split()) <= 1:
            return None
    return _line_problem(lines)


def _line_problem(lines: list[bytes]) -> str | None:
    for number, raw in enumerate(lines):
        line = raw if isinstance(raw, bytes) else str(raw).encode("utf-8", "surrogateescape")
        if line.endswith(b"\n") and not line.endswith(b"\r\n"):
            return "its WARC header holds a bare line feed (a field may have been cut)"
        if number and line[:1] in (b" ", b"\t") and line.strip():
            return "its WARC header holds a folded line (a field continued on the next line)"
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"warc-target-uri" and len(value.split()) > 1:
            return "its WARC-Target-URI holds a space (warcio would rewrite it as %20)"
    return None


class _QuietRepairs(logging.Filter):
    """warcio logs each target URI it repairs; the import reports those records itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Replacing spaces in invalid WARC-Target-URI" not in record.getMessage()


logging.getLogger("warcio.recordloader").addFilter(_QuietRepairs())


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def next_record_start(path: Path, layout: Layout, *, at_or_after: int) -> int | None:
    """The offset of the first place at or after `at_or_after` that looks like a record start
    (a gzip member opening with `WARC/`, or a `WARC/1.` line), None when there is none. It
    can be a false one: a WARC inside a record's payload looks the same."""
    if layout is Layout.WHOLE_GZIP:
        raise ValueError("a whole-file gzip WARC cannot be entered in the middle")
    if at_or_after == 0:
        return 0 if os.path.getsize(path) else None
    with open(path, "rb") as stream:
        return _resync(stream, layout, at_or_after)


def _resync(stream: BinaryIO, layout: Layout, after: int) -> int | None:
    """The offset of the next record start after `after`, or None at the end."""
    marker = _GZIP_MAGIC if layout is Layout.RECORD_GZIP else b"WARC/1."
    position = after
    stream.seek(position)
    tail = b""
    while True:
        chunk = stream.read(_SCAN)
        if not chunk:
            return None
        window = tail + chunk
        base = position - len(tail)
        found = window.find(marker)
        while found >= 0:
            candidate = base + found
            if candidate >= after and _starts_record(stream, layout, candidate=candidate,
                                                    window=window, found=found):
                return candidate
            found = window.find(marker, found + 1)
        tail = window[-(len(marker) - 1):]
        position += len(chunk)
        stream.seek(position)


def _starts_record(stream: BinaryIO, layout: Layout, *, candidate: int, window: bytes,
                   found: int) -> bool:
    if layout is not Layout.RECORD_GZIP:
        return found == 0 or window[found - 1:found] == b"\n" or candidate == 0
    here = stream.tell()
    try:
        stream.seek(candidate)
        inflate = zlib.decompressobj(31)
        out = inflate.decompress(stream.read(4096), 16)
        return out.startswith(b"WARC/")
    except zlib.error:
        return False
    finally:
        stream.seek(here)
