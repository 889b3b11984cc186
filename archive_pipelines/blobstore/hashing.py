"""Streaming SHA-256 helpers and a snapshot of a file's identity for change detection."""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from archive_pipelines.blobstore.keys import CHUNK_SIZE


def sha256_file(path: Path | str) -> tuple[str, int]:
    """Hash a file in chunks. Returns (hex sha256, size in bytes)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return sha256_fd(fd)
    finally:
        os.close(fd)


def sha256_fd(fd: int) -> tuple[str, int]:
    """Hash what remains of an open file descriptor. Returns (hex sha256, size read).

    Reads into one reused buffer per thread: a fresh 1 MiB bytes object per read costs an
    mmap and 256 page faults, which made hashing from the page cache half as fast.
    """
    digest = hashlib.sha256()
    size = 0
    buffer, view = chunk_buffer()
    while count := os.readv(fd, [buffer]):
        digest.update(view[:count])
        size += count
    return digest.hexdigest(), size


_buffers = threading.local()


def chunk_buffer() -> tuple[bytearray, memoryview]:
    """This thread's reusable CHUNK_SIZE buffer and a view of it (not reentrant)."""
    try:
        return _buffers.pair
    except AttributeError:
        buffer = bytearray(CHUNK_SIZE)
        _buffers.pair = (buffer, memoryview(buffer))
        return _buffers.pair


@dataclass(frozen=True)
class FileState:
    """What must not change while a file is being ingested."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, target: Path | int) -> FileState:
        """The state of a path (following symlinks) or of an open file descriptor."""
        return cls.from_stat(os.fstat(target) if isinstance(target, int) else os.stat(target))

    @classmethod
    def from_stat(cls, st: os.stat_result) -> FileState:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class HashingWriter:
    """Passes writes through to `target` while hashing and counting them."""

    def __init__(self, target: BinaryIO, *, hash_writes: bool = True) -> None:
        self._target = target
        self._digest = hashlib.sha256()
        self._hash_writes = hash_writes
        self.count = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:
        size = memoryview(data).nbytes
        if self._hash_writes:
            self._digest.update(data)
        self.count += size
        self._target.write(data)
        return size

    def flush(self) -> None:
        self._target.flush()

    def digest(self) -> bytes:
        return self._digest.digest()
