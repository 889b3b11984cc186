"""WARC records out through `warcio`'s writer, one gzip member per record, compressed on a
thread of its own, with each record's place in the file (what a CDXJ index and a WACZ need).

warcio builds each record and writes its bytes, uncompressed, into a sink of ours; the sink
hands them in pieces to a compressing thread that ends a gzip member wherever warcio ends a
record (its `flush`). zlib releases the GIL while it compresses, so building the next record
and compressing the last one run at once on two cores. The queue between them is bounded:
memory stays flat whatever the size of a body. The level is ours to choose (warcio's own
wrapper uses 9 and flushes the file after every record). The bytes, digests and headers of
each record are still warcio's.
"""

from __future__ import annotations

import queue
import threading
import zlib
from collections.abc import Callable
from typing import BinaryIO

from warcio.recordloader import ArcWarcRecord
from warcio.warcwriter import WARCWriter

DEFAULT_GZIP_LEVEL = 6
_PIECE = 256 * 1024  # bytes handed to the compressing thread at once
_QUEUED = 64  # pieces in flight at most (16 MiB)
_GZIP = zlib.MAX_WBITS + 16  # a gzip member, not a zlib stream
_SAMPLE = 4096  # bytes of a record sampled for compressibility
_SAMPLE_FROM = 16 * 1024  # records smaller than this are compressed without a look

Placed = Callable[[int, int], None]  # (offset, length) of a record in the file


class _Sink:
    """What warcio writes into. Bytes gather into a batch of (piece, ends a record) pairs, and
    a batch goes to the compressing thread once it holds `_PIECE` bytes: one hand-over for
    many small records. `flush` (warcio's, at the end of each record) marks a record's end."""

    def __init__(self, batches: queue.Queue[list[tuple[bytes, bool]] | None]) -> None:
        self._batches = batches
        self._batch: list[tuple[bytes, bool]] = []
        self._record = bytearray()
        self._size = 0

    def write(self, data: bytes) -> int:
        self._record += data
        if len(self._record) >= _PIECE:
            self._add(ends=False)
        return len(data)

    def flush(self) -> None:
        self._add(ends=True)

    def send(self) -> None:
        """Hand over what has gathered."""
        if self._batch:
            self._batches.put(self._batch)
            self._batch = []
            self._size = 0

    def _add(self, *, ends: bool) -> None:
        self._batch.append((bytes(self._record), ends))
        self._size += len(self._record)
        self._record.clear()
        if self._size >= _PIECE:
            self.send()


class RecordWriter:
    """Writes records to `out` (a binary file open for writing); each `write` may name who
    hears where the record landed (called on the compressing thread, in record order).
    `close()` waits for the last record; a failure of the thread is raised there or at the
    next write."""

    def __init__(self, out: BinaryIO, *, gzip_level: int = DEFAULT_GZIP_LEVEL) -> None:
        self._out = out
        self._level = gzip_level
        self._batches: queue.Queue[list[tuple[bytes, bool]] | None] = queue.Queue(maxsize=_QUEUED)
        self._placed: queue.SimpleQueue[Placed | None] = queue.SimpleQueue()
        self._failure: BaseException | None = None
        self._position = out.tell()
        self._sink = _Sink(self._batches)
        self.builder = WARCWriter(self._sink, gzip=False, warc_version="1.1")
        self._thread = threading.Thread(target=self._compress, name="warc-gzip", daemon=True)
        self._thread.start()

    @property
    def position(self) -> int:
        """Bytes written to the file so far (records still in the queue not counted)."""
        return self._position

    def write(self, record: ArcWarcRecord, placed: Placed | None = None) -> None:
        if self._failure is not None:
            raise self._failure
        self._placed.put(placed)
        self.builder.write_record(record)

    def close(self) -> None:
        """Wait until every record is compressed and written."""
        if self._thread.is_alive():
            self._sink.send()
            self._batches.put(None)
            self._thread.join()
        if self._failure is not None:
            raise self._failure

    def _compress(self) -> None:
        out, level = self._out, self._level
        compressor = None
        start = self._position
        try:
            while (batch := self._batches.get()) is not None:
                for piece, ends in batch:
                    if compressor is None and ends:  # a whole record: one call
                        data = zlib.compress(piece, _level_for(piece, level), _GZIP)
                    else:
                        if compressor is None:
                            compressor = zlib.compressobj(_level_for(piece, level),
                                                          zlib.DEFLATED, _GZIP)
                        data = compressor.compress(piece)
                        if ends:
                            data += compressor.flush()
                            compressor = None
                    out.write(data)
                    self._position += len(data)
                    if ends:
                        placed = self._placed.get()
                        if placed is not None:
                            placed(start, self._position - start)
                        start = self._position
        except BaseException as exc:  # kept for the writing thread, which raises it
            self._failure = exc
            while self._batches.get() is not None:  # let the writer finish, unblocked
                pass


def _level_for(piece: bytes, level: int) -> int:
    """`level`, or 0 (stored blocks: still a gzip member, read like any other) for a record
    whose bytes do not compress: a sample from its middle (past the headers, in the payload)
    shrinks by less than 3% at level 1. Images, video, fonts and archives are most of a
    crawl's bytes and are compressed already: deflating them again costs much CPU for
    nothing."""
    if len(piece) < _SAMPLE_FROM:
        return level
    middle = len(piece) // 2
    sample = piece[middle:middle + _SAMPLE]
    return 0 if len(zlib.compress(sample, 1)) > 0.97 * len(sample) else level
