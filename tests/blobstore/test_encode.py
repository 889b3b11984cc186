"""encode_stream reuses one zstd compressor per thread: a stream that fails mid-frame must
not leave its half-written frame in the compressor the next blob uses."""

import io

import pytest
import zstandard

from archive_pipelines.blobstore.encode import encode_stream
from archive_pipelines.blobstore.keys import CHUNK_SIZE

pytestmark = pytest.mark.unit


def _decompress(frame: bytes) -> bytes:
    return zstandard.ZstdDecompressor().decompressobj().decompress(frame)


class _FailingSource(io.RawIOBase):
    """One chunk of data, then an I/O error (a source file on a failing disk)."""

    def __init__(self) -> None:
        self._served = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._served:
            raise OSError("read error")
        self._served = True
        buffer[:CHUNK_SIZE] = b"x" * CHUNK_SIZE
        return CHUNK_SIZE


def test_a_failed_stream_leaves_the_next_frame_intact() -> None:
    with pytest.raises(OSError, match="read error"):
        encode_stream(_FailingSource(), io.BytesIO(), codec="zstd", zstd_level=3)
    data = b"the next blob " * 1000
    target = io.BytesIO()
    encoded = encode_stream(io.BytesIO(data), target, codec="zstd", zstd_level=3)
    assert encoded.size == len(data)
    assert _decompress(target.getvalue()) == data


def test_blobs_encoded_one_after_another_are_each_a_whole_frame() -> None:
    frames = []
    for data in (b"a" * 5000, b"b" * 7000, b"a" * 5000):
        target = io.BytesIO()
        encode_stream(io.BytesIO(data), target, codec="zstd", zstd_level=3)
        frames.append(target.getvalue())
        assert _decompress(target.getvalue()) == data
    assert frames[0] == frames[2]  # same input, same level: the same frame every time
