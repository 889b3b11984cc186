"""gc's choice of unreferenced blobs, shared by the local and the S3 passes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from archive_pipelines.catalog import Catalog
from archive_pipelines.storage.primary import PrimaryStore


def unreferenced_blobs(catalog: Catalog, primary: PrimaryStore, cutoff: datetime, *, batch: int
                        ) -> Iterator[list[tuple[int, str]]]:
    """The decision for blobs: ref_count 0 since before `cutoff`, present on the primary."""
    store_id = primary.store_id
    last = 0
    while True:
        with catalog.reading() as tx:
            rows = tx.blobs.unreferenced_page(store_id=store_id, cutoff=cutoff, after=last,
                                     limit=batch)
        if not rows:
            return
        last = rows[-1][0]
        yield rows
