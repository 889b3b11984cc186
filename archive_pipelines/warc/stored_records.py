"""A record inside a stored WARC read without a local file: ranged reads of the blob.

Where the store has no file of the WARC (an object store), a capture's record is read from
its offset: a first window (`WINDOW`, one ranged GET) holds its WARC and HTTP header blocks
almost always; when it does not, a window four times larger is read, up to `MAX_HEAD`. In a
gzip-per-record file the window is inflated to the end of the record's member (or of the
window). A whole-file gzip WARC has no offsets in the stored bytes: it is streamed and
inflated from its start up to the record (as a local read of such a file does). Only the
header blocks are wanted (the capture's body is a blob of its own), so the payload may be cut.

A reader that goes through a file's records in order (an export) passes a `ReadAhead`: each
ranged GET then fetches `ReadAhead.size` bytes and the records within them are read from
memory, so a run of small records costs one request, not one each.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass
from typing import BinaryIO

from archive_pipelines.blobstore import BlobStore
from archive_pipelines.warc.warc_files import FoundRecord, Layout, record_in

WINDOW = 64 * 1024
MAX_HEAD = 8 * 1024 * 1024  # header blocks longer than this are read cut short
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")
_HTTP_TYPES = (b"response", b"revisit", b"request")


@dataclass
class _Window:
    sha256: str
    start: int
    data: bytes
    whole_rest: bool  # the blob ends within it


class ReadAhead:
    """The last `size` bytes read of a stored WARC, for readers that go through its records
    in order (one window: records are read file by file)."""

    def __init__(self, size: int = 1024 * 1024) -> None:
        self.size = size
        self._window: _Window | None = None

    def read(self, store: BlobStore, sha256: str, *, offset: int, length: int) -> bytes:
        """Up to `length` bytes of the blob from `offset`, from the window when it holds them."""
        window = self._window
        if window is not None and window.sha256 == sha256 and window.start <= offset and (
                offset + length <= window.start + len(window.data) or window.whole_rest):
            at = offset - window.start
            return window.data[at:at + length]
        asked = max(length, self.size)
        data = store.read_range(sha256, offset, asked)
        self._window = _Window(sha256, offset, data, whole_rest=len(data) < asked)
        return data[:length]


def read_stored_record(store: BlobStore, sha256: str, layout: Layout, *, offset: int,
                       ahead: ReadAhead | None = None) -> FoundRecord:
    """The record at `offset` of the stored WARC `sha256`, its header blocks parsed (see the
    module docstring). ValueError when no record starts there; BlobNotFound if absent."""
    if offset < 0:
        raise ValueError(f"bad record offset {offset}")
    if layout is Layout.WHOLE_GZIP:
        with store.open(sha256) as reader:
            data = _streamed_head(reader, offset)
    else:
        data = _ranged_head(store, sha256, layout, offset=offset, ahead=ahead)
    return record_in(data, offset=offset)


def _ranged_head(store: BlobStore, sha256: str, layout: Layout, *, offset: int,
                 ahead: ReadAhead | None) -> bytes:
    window = WINDOW
    while True:
        raw = (store.read_range(sha256, offset, window) if ahead is None
               else ahead.read(store, sha256, offset=offset, length=window))
        if not raw:
            raise ValueError(f"stored WARC {sha256[:12]} ends before {offset}")
        data, member_ended = _inflated(raw) if layout is Layout.RECORD_GZIP else (raw, False)
        if member_ended or len(raw) < window or heads_complete(data) or window >= MAX_HEAD:
            return data
        window *= 4


def _inflated(raw: bytes) -> tuple[bytes, bool]:
    """The gzip member at the start of `raw` inflated (at most `MAX_HEAD` bytes of it), and
    whether it ended within `raw`."""
    inflate = zlib.decompressobj(31)
    try:
        data = inflate.decompress(raw, MAX_HEAD)
    except zlib.error as exc:
        raise ValueError(f"no gzip member starts there ({exc})") from None
    return data, inflate.eof or len(data) >= MAX_HEAD


def _streamed_head(reader: BinaryIO, offset: int) -> bytes:
    with gzip.GzipFile(fileobj=reader, mode="rb") as stream:
        left = offset
        while left > 0:
            skipped = stream.read(min(left, 1 << 20))
            if not skipped:
                raise ValueError(f"the WARC ends before {offset}")
            left -= len(skipped)
        data = b""
        while len(data) < MAX_HEAD:
            chunk = stream.read(WINDOW)
            data += chunk
            if not chunk or heads_complete(data):
                break
    return data


def heads_complete(data: bytes) -> bool:
    """Whether `data` (a record from its start) holds its WARC header block and, for a record
    with an HTTP message, its HTTP header block (or its whole content)."""
    blank = _BLANK_LINE.search(data)
    if blank is None:
        return False
    head = data[:blank.start()].lower()
    length = _field(head, b"content-length")
    if length is None or not length.isdigit() or blank.end() + int(length) <= len(data):
        return True  # (no length: whatever follows is for the parser to judge)
    if _field(head, b"warc-type") not in _HTTP_TYPES:
        return True
    return _BLANK_LINE.search(data, blank.end()) is not None


def _field(head: bytes, name: bytes) -> bytes | None:
    """The value of the header field `name` in a lowercased header block, if any."""
    at = head.find(b"\n" + name + b":")
    if at < 0:
        return None
    start = at + len(name) + 2
    end = head.find(b"\n", start)
    return head[start:end if end >= 0 else len(head)].strip()
