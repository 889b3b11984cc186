"""Removing files and snapshots: release references, then remove their view links."""

from __future__ import annotations

import os
from dataclasses import dataclass

from archive_pipelines.catalog.files import release_files, snapshot_file_rows
from archive_pipelines.catalog.repository import delete_snapshot_row
from archive_pipelines.catalog.sessions import Catalog
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
    with catalog.session() as session:
        rows = snapshot_file_rows(session, snapshot_id, relative_path=relative_path)
        released = release_files(session, [(r[0], r[1]) for r in rows])
        place = places_for(session, [snapshot_id]).get(snapshot_id)
    report = RemoveReport(files=released)
    if place is not None:
        report.links_removed = _unlink(views, place, [r[3] for r in rows])
    return report


def delete_snapshot(catalog: Catalog, views: ViewSet, snapshot_id: str) -> RemoveReport:
    """Delete a snapshot and release every file it referenced; remove its view links."""
    with catalog.session() as session:
        rows = snapshot_file_rows(session, snapshot_id)
        place = places_for(session, [snapshot_id]).get(snapshot_id)
        released = release_files(session, [(r[0], r[1]) for r in rows])
        delete_snapshot_row(session, snapshot_id)
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
