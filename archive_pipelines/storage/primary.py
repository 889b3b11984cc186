"""`PrimaryStore`: the primary blob store and its id in the catalog (imports no catalog)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from pathlib import Path

from archive_pipelines.blobstore import LocalBlobStore


class PrimaryStore:
    """The primary store: always local (settings enforce it), so views can link into it.

    The store is opened, and its catalog row found or made (`store_id`), on first use: a
    command that never touches the store neither creates its folders nor writes the catalog.
    """

    def __init__(self, root: Path, open_store: Callable[[], LocalBlobStore],
                 find_store_id: Callable[[], int]) -> None:
        self.root = root
        self._open_store, self._find_store_id = open_store, find_store_id

    @cached_property
    def store(self) -> LocalBlobStore:
        return self._open_store()

    @cached_property
    def store_id(self) -> int:
        """The store's row in the catalog (`blob_copy.store_id` of its copies)."""
        return self._find_store_id()
