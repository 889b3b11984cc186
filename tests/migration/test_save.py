"""Migrate on save: a snapshot whose fs_version is behind is migrated before it changes."""

from __future__ import annotations

import os

import pytest

from archive_pipelines.catalog import Catalog
from archive_pipelines.migration import SnapshotMigrationError, import_orphans, save_snapshot
from archive_pipelines.storage.assembly import StorageParts
from tests.helpers.migration import FLAT, TS, URL, flat_snapshot, snapshots


def test_save_migrates_first_then_applies_the_changes(storage: StorageParts) -> None:
    sid, folder = flat_snapshot(storage)

    report = save_snapshot(storage.catalog, storage.primary, storage.views,
                           work=storage.work, layout=storage.layout,
                           snapshot_id=sid, title="New title", tags=["b", "a", "a"], crawl_id="crawl-1")

    assert report.migration is not None and report.migration.steps == ["to_cas"]
    assert report.changed == ["crawl_id", "tags", "title"]
    saved = snapshots(storage)[TS]
    assert (saved.fs_version, saved.title, saved.crawl_id) == ("cas", "New title", "crawl-1")
    assert sorted(t.name for t in saved.tags) == ["a", "b"]
    assert os.readlink(folder) == f"by_timestamp/{TS}"
    # Already current: no migration, just the change.
    assert save_snapshot(storage.catalog, storage.primary, storage.views,
                         work=storage.work, layout=storage.layout, snapshot_id=sid, tags=[]).migration is None
    assert snapshots(storage)[TS].tags == []


def test_a_failed_migration_blocks_the_save(sqlite_storage: StorageParts) -> None:
    sid, folder = flat_snapshot(sqlite_storage)
    os.mkfifo(folder / "pipe")  # a special file: never copied, so the folder cannot be retired
    with pytest.raises(SnapshotMigrationError, match="FIFO"):
        save_snapshot(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                      work=sqlite_storage.work, layout=sqlite_storage.layout,
                      snapshot_id=sid, title="Never saved")
    assert snapshots(sqlite_storage)[TS].title != "Never saved"
    assert (folder / "headers.json").read_bytes() == FLAT["headers.json"]


@pytest.mark.unit
def test_only_fields_that_place_no_files_can_be_saved(sqlite_storage: StorageParts) -> None:
    sid = Catalog(sqlite_storage.catalog.engine).snapshots.add_snapshot(url=URL, timestamp=TS).id
    with pytest.raises(ValueError, match="url"):
        save_snapshot(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                      work=sqlite_storage.work, layout=sqlite_storage.layout,
                      snapshot_id=sid, url="https://elsewhere.example/")
    with pytest.raises(KeyError):
        save_snapshot(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                      work=sqlite_storage.work, layout=sqlite_storage.layout,
                      snapshot_id="missing", title="x")
    assert import_orphans(sqlite_storage.catalog, sqlite_storage.layout).processed == 0
