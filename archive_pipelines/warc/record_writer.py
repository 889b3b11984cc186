"""WARC records out through `warcio`'s writer, one gzip member per record, with each
record's place in the file (what a CDXJ index and a WACZ need).

warcio's own gzip wrapper compresses at level 9 and flushes the file after every record;
ours hands warcio an uncompressed sink that ends a gzip member wherever warcio ends a record
(its `flush`), at a level we choose (6 by default, as gzip(1) does), and leaves the file's
buffering alone. The record bytes, digests and headers are still warcio's.
"""

from __future__ import annotations

import zlib
from typing import BinaryIO

from warcio.recordloader import ArcWarcRecord
from warcio.warcwriter import WARCWriter

DEFAULT_GZIP_LEVEL = 6


class _GzipMembers:
    """A write sink for warcio: bytes go into the current gzip member; `flush` (called by
    warcio once per record) closes the member."""

    def __init__(self, out: BinaryIO, *, level: int) -> None:
        self._out = out
        self._level = level
        self._compressor = self._new()

    def _new(self) -> zlib._Compress:
        return zlib.compressobj(self._level, zlib.DEFLATED, zlib.MAX_WBITS + 16)

    def write(self, data: bytes) -> int:
        self._out.write(self._compressor.compress(data))
        return len(data)

    def flush(self) -> None:
        self._out.write(self._compressor.flush())
        self._compressor = self._new()


class RecordWriter:
    """Writes records to `out` (a binary file open for writing at its start); `write`
    returns the record's (offset, length) in the file."""

    def __init__(self, out: BinaryIO, *, gzip_level: int = DEFAULT_GZIP_LEVEL) -> None:
        self._out = out
        self.builder = WARCWriter(_GzipMembers(out, level=gzip_level), gzip=False,
                                  warc_version="1.1")

    def write(self, record: ArcWarcRecord) -> tuple[int, int]:
        offset = self._out.tell()
        self.builder.write_record(record)
        return offset, self._out.tell() - offset
