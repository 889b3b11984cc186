"""Streaming readers that decode a stored object back to its raw bytes, with a size guard."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, BinaryIO, cast

import zstandard

from archive_pipelines.blobstore.keys import CHUNK_SIZE, Codec
from archive_pipelines.blobstore.store_errors import BlobIntegrityError
from archive_pipelines.blobstore.zstd_frames import ZstdFrameTracker

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer


class _TrackedSource:
    """Hands compressed bytes to the decoder and to the frame tracker."""

    def __init__(self, stored: BinaryIO, tracker: ZstdFrameTracker) -> None:
        self._stored = stored
        self._tracker = tracker

    def read(self, size: int = -1) -> bytes:
        data = self._stored.read(size)
        self._tracker.feed(data)
        return data


class _DecodedRaw(io.RawIOBase):
    def __init__(self, stored: BinaryIO, *, codec: Codec, max_size: int | None,
                 label: str) -> None:
        super().__init__()
        self._stored = stored
        self._codec = codec
        self._max_size = max_size
        self._label = label
        self._count = 0
        self._tracker: ZstdFrameTracker | None = None
        self._source: IO[bytes] = stored
        # Raw objects from a file (not an S3 body) are read into the caller's buffer.
        self._direct: Callable[[memoryview], int | None] | None = (
            getattr(stored, "readinto", None) if codec == "raw" else None)
        if codec == "zstd":
            self._tracker = ZstdFrameTracker()
            self._source = zstandard.ZstdDecompressor().stream_reader(
                cast(IO[bytes], _TrackedSource(stored, self._tracker)),
                read_size=CHUNK_SIZE, read_across_frames=True, closefd=False)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        if self._direct is not None:  # raw: straight into the caller's buffer, no copy
            got = self._direct(view)
            if got:
                self._count += got
                if self._max_size is not None and self._count > self._max_size:
                    raise self._corrupt(f"larger than {self._max_size} bytes")
            return got or 0
        try:
            data = self._source.read(len(view))
        except zstandard.ZstdError as exc:
            reason = str(exc) if str(exc).startswith("zstd") else f"zstd: {exc}"
            raise self._corrupt(reason) from exc
        if not data:
            if self._tracker is not None and not self._tracker.complete:
                raise self._corrupt("zstd: truncated frame")
            return 0
        self._count += len(data)
        if self._max_size is not None and self._count > self._max_size:
            if self._codec == "zstd":
                raise self._corrupt(f"zstd: decompressed beyond {self._max_size} bytes")
            raise self._corrupt(f"larger than {self._max_size} bytes")
        view[:len(data)] = data
        return len(data)

    def _corrupt(self, detail: str) -> BlobIntegrityError:
        return BlobIntegrityError(f"{self._label}: {detail}", detail=detail)

    def close(self) -> None:
        if not self.closed:
            try:
                if self._source is not self._stored:
                    self._source.close()
                self._stored.close()
            finally:
                super().close()


def open_decoded(stored: BinaryIO, *, codec: Codec, max_size: int | None,
                 label: str) -> BinaryIO:
    """Wrap a stored object's byte stream so reads return raw bytes.

    Reads raise BlobIntegrityError when the data do not decode, end mid-frame, or grow past
    `max_size` (the decompression-bomb guard). `label` names store and blob in messages.
    Closing the returned reader closes `stored`.
    """
    return io.BufferedReader(
        _DecodedRaw(stored, codec=codec, max_size=max_size, label=label),
        buffer_size=CHUNK_SIZE)
