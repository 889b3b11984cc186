"""Removing files and snapshots: release references, then remove their view links."""

from __future__ import annotations

import os
from dataclasses import dataclass

from archive_pipelines.catalog import Catalog
from archive_pipelines.counts import Counts
from archive_pipelines.storage.snapshot_places import places_for
from archive_pipelines.views import SnapshotPlace, ViewSet, view_dir


@dataclass
class RemoveReport(Counts):
    """Files released and view links removed."""

    files: int = 0
    links_removed: int = 0


def remove_file(catalog: Catalog, views: ViewSet, snapshot_id: str, *, relative_path: str) -> RemoveReport:
    """Delete one snapshot file: its blob loses a reference (gc may collect it later)."""
    with catalog.transaction() as tx:
        rows = tx.files.snapshot_file_rows(snapshot_id, relative_path=relative_path)
        released = tx.files.release_files([(r[0], r[1]) for r in rows])
        place = places_for(tx, [snapshot_id]).get(snapshot_id)
    report = RemoveReport(files=released)
    if place is not None:
        report.links_removed = _unlink(views, place, [r[3] for r in rows])
    return report


def delete_snapshot(catalog: Catalog, views: ViewSet, snapshot_id: str) -> RemoveReport:
    """Delete a snapshot and release every file it referenced; remove its view links."""
    with catalog.transaction() as tx:
        rows = tx.files.snapshot_file_rows(snapshot_id)
        place = places_for(tx, [snapshot_id]).get(snapshot_id)
        released = tx.files.release_files([(r[0], r[1]) for r in rows])
        tx.snapshots.delete_snapshot_row(snapshot_id)
    report = RemoveReport(files=released)
    if place is not None:
        report.links_removed = _unlink(views, place, [r[3] for r in rows])
    return report


def _unlink(views: ViewSet, place: SnapshotPlace, files: list[str]) -> int:
    """Remove the files' links from the file view; once the snapshot's folder there is gone
    (no file left), its folder links in the other views too."""
    home, farm = views.file_view, views.farm
    if home is None:
        return 0
    folder = view_dir(home, place)
    removed = sum(farm.remove_link(f"{folder}/{rel}") for rel in files)
    if not os.path.isdir(farm.archive_root / folder):
        removed += sum(farm.remove_link(link) for link, _target in views.folder_links(place))
    return removed
