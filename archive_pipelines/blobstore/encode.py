"""Encode a raw stream into a store's codec while hashing it (one pass, constant memory)."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import IO, BinaryIO, cast

import zstandard

from archive_pipelines.blobstore.hashing import HashingWriter, chunk_buffer
from archive_pipelines.blobstore.keys import CHUNK_SIZE, Codec


@dataclass(frozen=True)
class Encoded:
    """What `encode_stream` wrote."""

    sha256: str  # hex of the raw bytes read
    size: int  # raw bytes read
    stored_bytes: int  # encoded bytes written
    stored_digest: bytes  # sha256 of the encoded bytes (S3's upload checksum); b"" if not asked


_compressors = threading.local()


def _compressor(level: int) -> zstandard.ZstdCompressor:
    """This thread's compressor for `level`, reused: a new one per blob costs more than
    compressing a small blob (a fresh context and its tables each time)."""
    cache: dict[int, zstandard.ZstdCompressor] | None = getattr(_compressors, "by_level", None)
    if cache is None:
        cache = _compressors.by_level = {}
    found = cache.get(level)
    if found is None:
        # The frame checksum lets the decoder catch damaged blocks before our rehash does.
        found = cache[level] = zstandard.ZstdCompressor(level=level, write_checksum=True)
    return found


def encode_bytes(data: bytes, *, codec: Codec, zstd_level: int) -> bytes:
    """`data` as the codec stores it, in one call (a blob already in memory)."""
    return data if codec == "raw" else _compressor(zstd_level).compress(data)


def encode_stream(source: BinaryIO, target: BinaryIO, *, codec: Codec, zstd_level: int,
                  limit: int | None = None, stored_digest: bool = True) -> Encoded:
    """Copy `source` to `target` in chunks, compressing for zstd; hash raw and stored bytes.

    With `limit`, reading stops after `limit + 1` raw bytes, so a caller that expects at most
    `limit` bytes sees the overrun (size > limit) without consuming an endless stream.
    """
    raw_digest = hashlib.sha256()
    size = 0
    # Raw: the stored bytes are the raw bytes, so one digest serves both (no second pass).
    # Without `stored_digest` (local stores), the encoded bytes are not hashed at all.
    hash_stored = stored_digest and codec != "raw"
    out = HashingWriter(target, hash_writes=hash_stored)
    compressor: zstandard.ZstdCompressionWriter | None = None
    if codec == "zstd":
        compressor = _compressor(zstd_level).stream_writer(cast(IO[bytes], out), closefd=False)
    try:
        readinto = getattr(source, "readinto", None)
        _buffer, view = chunk_buffer()  # reused: no fresh 1 MiB object (and page faults) per read
        while True:
            want = CHUNK_SIZE if limit is None else min(CHUNK_SIZE, limit + 1 - size)
            if want <= 0:
                break
            if readinto is not None:
                got = readinto(view[:want])
                if not got:
                    break
                chunk: bytes | memoryview = view[:got]
            else:
                chunk = source.read(want)
                if not chunk:
                    break
            raw_digest.update(chunk)
            size += len(chunk)
            if compressor is not None:
                compressor.write(chunk)
            else:
                out.write(chunk)
        if compressor is not None:
            compressor.close()  # ends the frame; closefd=False leaves `target` open
    except BaseException:
        if compressor is not None:  # mid-frame: never hand this context to the next blob
            _compressors.by_level.pop(zstd_level, None)
        raise
    digest = raw_digest.digest() if codec == "raw" else (out.digest() if hash_stored else b"")
    return Encoded(raw_digest.hexdigest(), size, out.count, digest)
