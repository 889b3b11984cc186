"""`RemotePuts`: an ingest's puts into a store that is not a local folder (S3), on threads.

Requests per file: a blob the catalog (or this ingest) already knows is put HEAD-first: one
HEAD when it is in the bucket, as it should be (a missing one is uploaded again). A blob
nobody knows is most likely new: one conditional PUT (`If-None-Match: *`), which S3 refuses
without overwriting when another machine stored it meanwhile. So a new blob costs one
request, not a HEAD and a PUT.

Two files with the same bytes in flight at once would each find the blob unknown and each
upload it. So a file is hashed first, and puts of the same hash take turns: the second finds
the blob the first uploaded with one HEAD and sends nothing.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable

from archive_pipelines.blobstore import BlobStore, PutResult, sha256_file
from archive_pipelines.storage.file_workers import PutRequest, put_one

_STRIPES = 1024  # locks by hash prefix: distinct blobs rarely wait on each other
_REMEMBERED = 100_000  # hashes this ingest put, kept to spare catalog lookups (~15 MB)


class RemotePuts:
    """Store files into `store` from many threads, each distinct blob uploaded once.

    `known(sha256)`: whether the catalog has a row for that blob (None: every put looks
    before it puts)."""

    def __init__(self, store: BlobStore, *, known: Callable[[str], bool] | None = None) -> None:
        self.store = store
        self._known = known
        self._for_new = _conditional_twin(store) if known is not None else None
        self._locks = [threading.Lock() for _ in range(_STRIPES)]
        self._put: set[str] = set()

    def put(self, request: PutRequest) -> tuple[str, PutResult] | str:
        """`file_workers.put_one` (a copy: nothing to hard-link to), one hash at a time."""
        try:
            sha256 = sha256_file(request.source)[0]
        except OSError:  # put_one says what is wrong with the file
            return put_one(self.store, request, allow_hardlink=False)
        with self._locks[int(sha256[:8], 16) % _STRIPES]:
            store = self.store
            if self._for_new is not None and sha256 not in self._put \
                    and not self._known_blob(sha256):
                store = self._for_new
            outcome = put_one(store, request, allow_hardlink=False)
            if not isinstance(outcome, str):
                self._remember(outcome[1].sha256)
            return outcome

    def _known_blob(self, sha256: str) -> bool:
        assert self._known is not None
        return self._known(sha256)

    def _remember(self, sha256: str) -> None:
        if len(self._put) >= _REMEMBERED:
            self._put.clear()  # the catalog knows them by now (their batches committed)
        self._put.add(sha256)


def _conditional_twin(store: BlobStore) -> BlobStore | None:
    """The same S3 store (its client, its request counts) putting with one conditional PUT
    instead of a HEAD and a PUT; None for a store without that choice."""
    if not getattr(store, "look_before_put", False):
        return None
    twin = copy.copy(store)
    twin.look_before_put = False  # type: ignore[attr-defined]
    return twin
