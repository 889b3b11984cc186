"""Where snapshots appear in the views: the catalog's place rows as `views.SnapshotPlace`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from archive_pipelines.catalog import CatalogTransaction, PlaceRow, SnapshotEntries, SnapshotFiles
from archive_pipelines.views import SnapshotPlace


def place_of(row: PlaceRow) -> SnapshotPlace:
    return SnapshotPlace(snapshot_id=row.snapshot_id, url=row.url, timestamp=row.timestamp,
                         created_at=row.created_at, created_by=row.created_by,
                         owns_timestamp=row.owns_timestamp)


def places_for(tx: CatalogTransaction, snapshot_ids: Iterable[str]) -> dict[str, SnapshotPlace]:
    """Places of these snapshots, with by_timestamp ownership resolved."""
    return {sid: place_of(row) for sid, row in tx.files.place_rows(snapshot_ids).items()}


def iter_snapshot_files(tx: CatalogTransaction,
                        created_between: tuple[datetime, datetime] | None = None,
                        ) -> Iterator[tuple[SnapshotPlace, SnapshotFiles, SnapshotEntries]]:
    """(place, files, entries) per snapshot (optionally per snapshot created in [start,
    end)) with files or entries the views keep (`catalog.files.iter_snapshot_contents`)."""
    for row, files, entries in tx.files.iter_snapshot_contents(created_between):
        yield place_of(row), files, entries
