"""`PrimaryStore`: the primary blob store and its id in the catalog (imports no catalog)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from pathlib import Path

from archive_pipelines.blobstore import BlobStore


class PrimaryStore:
    """The primary store: a local raw folder (`root`: views link into it, ingest may hard-link)
    or an S3 bucket (`root` None: no views, every machine reads the same objects).

    The store is opened, and its catalog row found or made (`store_id`), on first use: a
    command that never touches the store neither creates its folders nor writes the catalog.
    """

    def __init__(self, root: Path | None, open_store: Callable[[], BlobStore],
                 find_store_id: Callable[[], int]) -> None:
        self.root = root
        self._open_store, self._find_store_id = open_store, find_store_id

    @property
    def is_local(self) -> bool:
        """Whether the store is a folder on this machine."""
        return self.root is not None

    @cached_property
    def store(self) -> BlobStore:
        return self._open_store()

    @cached_property
    def store_id(self) -> int:
        """The store's row in the catalog (`blob_copy.store_id` of its copies)."""
        return self._find_store_id()
