"""Snapshots sharing a timestamp: by_timestamp/<ts> is the oldest's, archive/<ts> links to it,
and only the snapshot whose files a real archive/<ts> holds ever migrates it."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from archive_pipelines.catalog import Catalog
from archive_pipelines.catalog.models import Snapshot
from archive_pipelines.legacy.versions import CAS, output_dir
from archive_pipelines.migration import import_orphans, migrate_snapshot, save_snapshot
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.file_ingest import ingest_file
from archive_pipelines.storage.snapshot_places import places_for
from tests.helpers.migration import tree_hashes
from tests.helpers.storage import sha, write_tree
from tests.legacy.index_docs import v04

TS = "1600000000"
URL = "https://www.example.com/legacy"
OTHER = "https://other.example.org/native"
LEGACY = {"index.json": json.dumps(v04(url=URL, timestamp=TS)).encode(),
          "output.html": b"<html>the legacy folder's dom</html>"}


def legacy_folder(storage: StorageParts) -> str:
    write_tree(storage.layout.archive / TS, LEGACY)
    assert import_orphans(storage.catalog, storage.layout).imported == 1
    return next(s.id for s in snapshots_with(storage, TS) if s.url == URL)


def snapshots_with(storage: StorageParts, timestamp: str) -> list[Snapshot]:
    with storage.catalog.transaction() as tx:
        return list(tx.session.scalars(select(Snapshot).where(Snapshot.timestamp == timestamp)))


def files_of(storage: StorageParts, sid: str) -> dict[str, str]:
    with storage.catalog.transaction() as tx:
        return {r[3]: r[4] for r in tx.files.snapshot_file_rows(sid)}


@pytest.mark.unit
def test_a_non_owner_never_takes_the_owners_folder_or_link(sqlite_storage: StorageParts) -> None:
    storage = sqlite_storage
    owner = legacy_folder(storage)  # created 2020 (its timestamp): the oldest, the owner
    later = Catalog(storage.catalog.engine).snapshots.add_snapshot(
        url=OTHER, timestamp=TS, fs_version="0.6", created_at=datetime(2024, 1, 1, tzinfo=UTC)).id
    folder = storage.layout.archive / TS
    before = tree_hashes(folder)

    step = migrate_snapshot(storage.catalog, storage.primary, storage.views,
                            work=storage.work, layout=storage.layout, snapshot_id=later)

    assert step.skipped == f"archive/{TS} holds the files of {owner}" and step.to_version == "0.6"
    assert tree_hashes(folder) == before and not folder.is_symlink()
    assert migrate_snapshot(storage.catalog, storage.primary, storage.views,
                            work=storage.work, layout=storage.layout, snapshot_id=owner).to_version == CAS
    assert os.readlink(folder) == f"by_timestamp/{TS}"
    # Now the folder is a link, the other snapshot has nothing to move and leaves it as it is.
    assert (migrate_snapshot(storage.catalog, storage.primary, storage.views,
                             work=storage.work, layout=storage.layout,
                             snapshot_id=later).to_version, files_of(storage, later)) == (CAS, {})
    assert os.readlink(folder) == f"by_timestamp/{TS}"
    assert files_of(storage, owner) == {"output.html": sha(LEGACY["output.html"]),
                                        "index.json": sha(LEGACY["index.json"])}


@pytest.mark.unit
def test_a_non_owners_folder_goes_to_its_view_path_and_the_link_to_the_owner(
        sqlite_storage: StorageParts) -> None:
    storage = sqlite_storage
    native = Catalog(storage.catalog.engine).snapshots.add_snapshot(
        url=OTHER, timestamp=TS, created_at=datetime(2019, 1, 1, tzinfo=UTC)).id  # older: the owner
    source = write_tree(storage.settings.data_dir.parent / "native", {"page.html": b"native"})
    assert not ingest_file(storage.catalog, storage.primary, storage.views, work=storage.work,
                           snapshot_id=native, extractor="dom", relative_path="page.html",
                           source=source / "page.html").errors
    legacy = legacy_folder(storage)

    step = migrate_snapshot(storage.catalog, storage.primary, storage.views,
                            work=storage.work, layout=storage.layout, snapshot_id=legacy)

    assert (step.to_version, step.errors) == (CAS, [])
    with storage.catalog.transaction() as tx:
        places = places_for(tx, [native, legacy])
    assert not places[legacy].owns_timestamp
    moved = output_dir(storage.settings.data_dir, places[legacy], CAS)
    assert moved.name == f"{TS}__{legacy[:8]}"
    assert (moved / "output.html").read_bytes() == LEGACY["output.html"]
    # archive/<ts> is the owner's folder, as by_timestamp/<ts> is.
    link = storage.layout.archive / TS
    assert os.readlink(link) == f"by_timestamp/{TS}"
    assert link.resolve() == output_dir(storage.settings.data_dir, places[native], CAS).resolve()
    assert (link / "dom" / "page.html").read_bytes() == b"native"


@pytest.mark.unit
def test_the_owners_compatibility_link_is_no_folder_turning_up_for_a_folderless_record(
        sqlite_storage: StorageParts) -> None:
    storage = sqlite_storage
    owner = legacy_folder(storage)
    assert migrate_snapshot(storage.catalog, storage.primary, storage.views,
                            work=storage.work, layout=storage.layout,
                            snapshot_id=owner).to_version == CAS  # archive/<ts> is now its link
    folderless = Catalog(storage.catalog.engine).snapshots.add_snapshot(
        url=OTHER, timestamp=TS, fs_version="0.x", created_at=datetime(2024, 1, 1, tzinfo=UTC)).id

    step = migrate_snapshot(storage.catalog, storage.primary, storage.views,
                            work=storage.work, layout=storage.layout, snapshot_id=folderless)
    saved = save_snapshot(storage.catalog, storage.primary, storage.views,
                          work=storage.work, layout=storage.layout,
                          snapshot_id=folderless, title="kept as a record")

    assert (step.skipped, step.to_version) == ("no folder", "0.x")
    assert saved.migration is None
    assert {s.id: s.fs_version for s in snapshots_with(storage, TS)}[folderless] == "0.x"
    assert os.readlink(storage.layout.archive / TS) == f"by_timestamp/{TS}"
