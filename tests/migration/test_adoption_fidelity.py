"""Adopting a real-shaped ArchiveBox 0.7 collection loses nothing and opens exactly as before.

A manifest (path, sha256) of every original file, index.json included, is taken first. After
`update` (import + migration into the store):
- every original path under `archive/<ts>/` opens the same bytes;
- every sha256 is a blob in the store, hashing to its name, referenced by that very path;
- every relative link of a snapshot's HTML that resolved before resolves under
  `archive/<timestamp>/`, and in every view every one of those that stays inside the folder;
- collection-level files (index.sqlite3, sources/, ArchiveBox.conf, logs/) are unchanged;
- ids, added/updated, tags and results are ArchiveBox's, from index.sqlite3 and from
  index.json alone.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from sqlalchemy import select

from archive_pipelines.blobstore import sha256_file
from archive_pipelines.catalog.models import ArchiveResult, Blob, Snapshot, SnapshotFile
from archive_pipelines.datadir import initialize
from archive_pipelines.legacy.fields import parse_datetime
from archive_pipelines.migration import import_orphans
from archive_pipelines.migration.collection import migrate_all
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import StorageParts, open_storage
from archive_pipelines.storage.snapshot_places import places_for
from archive_pipelines.views import view_dir
from archive_testkit.archivebox import Aged07, Collection07, generate_collection
from archive_testkit.links import resolving_links, stays_inside
from archive_testkit.manifest import check_manifest, manifest
from tests.helpers.cli import run_cli
from tests.helpers.migration import top_level_files

VIEWS = ("by_timestamp", "by_domain", "by_date", "by_user")


@pytest.fixture(scope="module")
def adopted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Collection07, StorageParts, dict, dict, dict]:
    """A 0.7 collection, its manifests and links before, adopted with the CLI's `update`."""
    data = tmp_path_factory.mktemp("abx07") / "data"
    collection = generate_collection(data, Aged07(orphans=2), snapshots=14, seed=7)
    before = manifest(data, "archive")
    before_collection = top_level_files(data)
    links = {s.timestamp: resolving_links(data / s.folder) for s in collection.snapshots}
    initialize(Settings(data_dir=data))

    result = run_cli("--data-dir", str(data), "update", "--import-orphans", "--migrate-fs")

    assert result.returncode == 0, result.stdout + result.stderr
    storage = open_storage(Settings(data_dir=data))
    return collection, storage, before, before_collection, links


def test_every_original_path_opens_the_same_bytes(adopted: tuple) -> None:
    collection, storage, before, before_collection, _links = adopted
    root = storage.settings.data_dir
    assert any(path.endswith("/index.json") for path in before)
    assert check_manifest(root, before) == []
    for snapshot in collection.snapshots:  # the folders are in the store now, not copies
        assert (root / snapshot.folder).is_symlink()
    assert top_level_files(root) == before_collection  # index.sqlite3 & co. never modified


def test_every_original_is_a_verified_blob_referenced_by_its_own_path(adopted: tuple) -> None:
    _collection, storage, before, _before_collection, _links = adopted
    with storage.catalog.reading() as tx:
        rows = tx.session.execute(
            select(Snapshot.timestamp, SnapshotFile.relative_path, Blob.sha256, Blob.ref_count)
            .join(SnapshotFile, SnapshotFile.snapshot_id == Snapshot.id)
            .join(Blob, Blob.id == SnapshotFile.blob_id)).all()
    recorded = {f"archive/{ts}/{rel}": (sha, refs) for ts, rel, sha, refs in rows}
    for path, sha in before.items():
        assert path in recorded, f"{path} is not referenced"
        assert recorded[path][0] == sha and recorded[path][1] >= 1, path
        blob = storage.primary.store.local_path(sha)
        assert sha256_file(blob)[0] == sha, f"{path}: blob {sha[:12]} does not hash to its name"


def test_relative_links_keep_working_from_every_view(adopted: tuple) -> None:
    collection, storage, _before, _before_collection, links = adopted
    archive = storage.layout.archive
    with storage.catalog.reading() as tx:
        ids = {s.timestamp: s.id for s in tx.session.scalars(select(Snapshot))}
        places = places_for(tx, ids.values())
    total = inside = 0
    for snapshot in collection.snapshots:
        worked = links[snapshot.timestamp]
        total += len(worked)
        assert worked <= resolving_links(archive / snapshot.timestamp), snapshot.timestamp
        kept = {(page, link) for page, link in worked if stays_inside(page, link)}
        inside += len(kept)
        place = places[ids[snapshot.timestamp]]
        for view in VIEWS:
            folder = archive / view_dir(view, place)
            missing = kept - resolving_links(folder)
            assert not missing, f"{view}: {sorted(missing)[:3]}"
    assert total > 20 * len(collection.snapshots) and inside > 10 * len(collection.snapshots)


def _catalog(storage: StorageParts) -> dict[str, Snapshot]:
    with storage.catalog.transaction() as tx:
        return {s.timestamp: s for s in tx.session.scalars(select(Snapshot))}


def _results(storage: StorageParts, snapshot_id: str) -> list[ArchiveResult]:
    with storage.catalog.transaction() as tx:
        return list(tx.session.scalars(select(ArchiveResult).where(ArchiveResult.snapshot_id == snapshot_id)))


def test_identity_is_archiveboxs_from_index_sqlite3(storage: StorageParts) -> None:
    root = storage.settings.data_dir
    collection = generate_collection(root, Aged07(files_per_snapshot=12, write_index_json=False),
                                     snapshots=10, seed=3)
    report = import_orphans(storage.catalog, storage.layout)
    assert report.error_count == 0, report.errors

    found = _catalog(storage)
    for snapshot in collection.snapshots:
        ours = found[snapshot.timestamp]
        assert ours.id == snapshot.snapshot_id
        assert ours.created_at == snapshot.added
        assert ours.archived_updated_at == snapshot.updated
        assert sorted(t.name for t in ours.tags) == sorted(snapshot.tags)
        expected = {(r["extractor"], str(r["id"]), r["uuid"], r["start_ts"], r["end_ts"], r["status"])
                    for r in snapshot.results}
        got = {(r.extractor, r.archivebox_id, r.archivebox_uuid, r.start_ts, r.end_ts, r.status)
               for r in _results(storage, ours.id)}
        assert got == expected, snapshot.timestamp
    assert migrate_all(storage.catalog, storage.primary, storage.views, work=storage.work,
                       layout=storage.layout,
                       batch_size=100).failed == 0
    assert {s.id for s in _catalog(storage).values()} == {s.snapshot_id for s in collection.snapshots}


@pytest.mark.unit
def test_identity_from_index_json_alone(sqlite_storage: StorageParts) -> None:
    root = sqlite_storage.settings.data_dir
    collection = generate_collection(root, Aged07(files_per_snapshot=12, with_sqlite=False),
                                     snapshots=8, seed=4)
    assert import_orphans(sqlite_storage.catalog, sqlite_storage.layout).error_count == 0

    found = _catalog(sqlite_storage)
    for snapshot in collection.snapshots:
        index = json.loads((root / snapshot.folder / "index.json").read_text())
        ours = found[snapshot.timestamp]
        assert ours.id == index["snapshot_id"] == snapshot.snapshot_id
        assert ours.archived_updated_at == parse_datetime(index["updated"])
        assert sorted(t.name for t in ours.tags) == sorted(snapshot.tags)
        # 0.7's index.json has no `added`: its timestamp is the moment it was added.
        assert ours.created_at == datetime.fromtimestamp(float(snapshot.timestamp), ours.created_at.tzinfo)
        runs = {(r["extractor"], r["start_ts"], r["end_ts"]) for r in snapshot.results}
        assert {(r.extractor, r.start_ts, r.end_ts) for r in _results(sqlite_storage, ours.id)} == runs


@pytest.mark.unit
def test_an_id_another_snapshot_has_is_reported_never_merged(sqlite_storage: StorageParts) -> None:
    """Two collections whose ids overlap: the second's folder is left alone, reported."""
    root = sqlite_storage.settings.data_dir
    collection = generate_collection(root, Aged07(files_per_snapshot=8, with_sqlite=False),
                                     snapshots=4, seed=5)
    first = collection.snapshots[0]
    assert import_orphans(sqlite_storage.catalog, sqlite_storage.layout).error_count == 0
    # Another collection's folder with the same snapshot id but another url and timestamp.
    other = root / "archive" / "1234567890.5"
    other.mkdir()
    index = json.loads((root / first.folder / "index.json").read_text())
    index.update(url="https://other.example/", timestamp="1234567890.5")
    (other / "index.json").write_text(json.dumps(index))

    report = import_orphans(sqlite_storage.catalog, sqlite_storage.layout)

    assert any("1234567890.5" in where and "already the catalog's snapshot" in why
               for where, why in report.problems), report.problems
    assert "1234567890.5" not in _catalog(sqlite_storage)
    assert (other / "index.json").exists()
