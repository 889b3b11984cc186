"""Blob store errors: one clear line naming the store and the blob."""

from __future__ import annotations

from archive_pipelines.archive_error import ArchiveError


class BlobStoreError(ArchiveError):
    """A store is unreachable, misconfigured or cannot be written."""


class BlobNotFound(BlobStoreError):
    """The store holds no object for this hash."""


class BlobIntegrityError(BlobStoreError):
    """Bytes do not match their hash, do not decode, or exceed their size.

    `detail` is the short reason without the store and hash (what `check()` reports).
    """

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail or message


class StoreNotWritable(BlobStoreError):
    """A put or delete on a store configured with `writable = false`."""
