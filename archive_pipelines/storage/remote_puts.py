"""`RemotePuts`: an ingest's puts into a store that is not a local folder (S3), on threads.

Two files with the same bytes in flight at once would each find the blob missing and each
upload it. So a file is hashed first, and puts of the same hash take turns: the second finds
the blob the first uploaded with one lookup (the store's HEAD) and sends nothing.
"""

from __future__ import annotations

import threading

from archive_pipelines.blobstore import BlobStore, PutResult, sha256_file
from archive_pipelines.storage.file_workers import PutRequest, put_one

_STRIPES = 1024  # locks by hash prefix: distinct blobs rarely wait on each other


class RemotePuts:
    """Store files into `store` from many threads, each distinct blob uploaded once."""

    def __init__(self, store: BlobStore) -> None:
        self.store = store
        self._locks = [threading.Lock() for _ in range(_STRIPES)]

    def put(self, request: PutRequest) -> tuple[str, PutResult] | str:
        """`file_workers.put_one` (a copy: nothing to hard-link to), one hash at a time."""
        try:
            sha256 = sha256_file(request.source)[0]
        except OSError:  # put_one says what is wrong with the file
            return put_one(self.store, request, allow_hardlink=False)
        with self._locks[int(sha256[:8], 16) % _STRIPES]:
            return put_one(self.store, request, allow_hardlink=False)
