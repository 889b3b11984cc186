"""Capture bodies from the blob store, hot ones from memory.

A body up to `max_item` bytes is read whole, its sha256 checked, and kept in an LRU bounded
by `capacity` bytes: the next request for it (the same stylesheet on every page of a site)
touches neither the disk nor the hash. Larger bodies are streamed from the store in chunks
and never held whole; their length is checked as they go. Everything here blocks: the
server calls it from its worker threads.
"""

from __future__ import annotations

import hashlib
from typing import BinaryIO

from archive_pipelines.blobstore import BlobStore
from archive_pipelines.blobstore.store_errors import BlobIntegrityError
from archive_pipelines.replay.lru import SizedLru

CHUNK = 64 * 1024


class CorruptBody(Exception):
    """The store's bytes are not the capture's body (hash or length differ)."""


class BodyCache:
    """Small bodies whole (checked, cached); large ones as streams."""

    def __init__(self, store: BlobStore, *, capacity: int, max_item: int) -> None:
        self.store = store
        self.max_item = max_item
        self.cache: SizedLru[str, bytes] = SizedLru(capacity, size_of=len, max_item=max_item)

    def whole(self, sha256: str, *, size: int) -> bytes:
        """The body, checked against its hash and size (BlobNotFound, CorruptBody)."""
        found = self.cache.get(sha256)
        if found is not None:
            return found
        try:
            with self.store.open(sha256, max_size=size) as reader:
                data = reader.read(size + 1)
        except BlobIntegrityError as exc:
            raise CorruptBody(exc.detail) from None
        if len(data) != size or hashlib.sha256(data).hexdigest() != sha256:
            raise CorruptBody(f"the store holds {len(data):,} bytes that do not hash to "
                              f"sha256:{sha256} ({size:,} bytes)")
        self.cache.put(sha256, data)
        return data

    def open(self, sha256: str, *, start: int = 0) -> BinaryIO:
        """A reader of the body from byte `start` on (BlobNotFound when absent)."""
        reader = self.store.open(sha256)
        try:
            if start:
                if reader.seekable():
                    reader.seek(start)
                else:
                    left = start
                    while left > 0:
                        skipped = reader.read(min(left, CHUNK))
                        if not skipped:
                            break
                        left -= len(skipped)
        except BaseException:
            reader.close()
            raise
        return reader


def read_chunk(reader: BinaryIO, left: int) -> bytes:
    """Up to one chunk of the `left` bytes still to send; CorruptBody when the stream ends
    early. Blocking."""
    try:
        data = reader.read(min(CHUNK, left))
    except BlobIntegrityError as exc:
        raise CorruptBody(exc.detail) from None
    if not data:
        raise CorruptBody(f"the stored body ends {left:,} bytes early")
    return data
