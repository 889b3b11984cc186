"""Blob files in the primary store that the catalog has no row for (verify reports them,
gc may collect them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from archive_pipelines.blobstore.hash_prefixes import HEX_PREFIXES, prefix_range
from archive_pipelines.catalog import Catalog
from archive_pipelines.storage.bucket import bucket_of
from archive_pipelines.storage.primary import PrimaryStore

if TYPE_CHECKING:
    from archive_pipelines.blobstore.s3 import StoredObject


def untracked_hashes(catalog: Catalog, primary: PrimaryStore) -> Iterator[str]:
    """Hashes of the primary's blob files without a catalog row, one hash-prefix partition
    at a time: the prefix's known hashes are read (one short read transaction), then the
    store's files of that prefix listed against them."""
    for prefix in HEX_PREFIXES:
        low, high = prefix_range(prefix)
        with catalog.reading() as tx:
            known = tx.blobs.hashes_in_range(low, high)
        for sha in primary.store.iter_hashes(prefix):
            if sha not in known:
                yield sha


def untracked_objects(catalog: Catalog, primary: PrimaryStore, *, batch: int = 1000
                      ) -> Iterator[StoredObject]:
    """`untracked_hashes` of an S3 primary, from one listing of the bucket (a request per
    1,000 objects; each page's hashes looked up in the catalog at once), with each object's
    size and last-modified time (gc's age of an untracked object)."""
    store = bucket_of(primary)
    page: list[StoredObject] = []

    def unknown() -> list[StoredObject]:
        with catalog.reading() as tx:
            known = tx.blobs.known_hashes([stored.name for stored in page])
        return [stored for stored in page if stored.name not in known]

    for stored in store.iter_objects():
        page.append(stored)
        if len(page) >= batch:
            yield from unknown()
            page = []
    if page:
        yield from unknown()
