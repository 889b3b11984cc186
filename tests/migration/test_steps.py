"""The one step into the store (`to_cas`): original paths kept, content verified, batches,
resumption, symlinks."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

import archive_pipelines.migration.cas as cas_module
from archive_pipelines.catalog import Catalog
from archive_pipelines.migration import import_orphans, migrate_batch, migrate_snapshot, to_cas
from archive_pipelines.migration.folders import folder_lock
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.file_ingest import IngestItem
from archive_pipelines.storage.verify import verify_storage
from archive_pipelines.storage.view_rebuild import rebuild_views
from archive_testkit.archivebox import ReleaseMix, generate_collection
from tests.helpers.migration import (
    ALL_RELEASES,
    FLAT,
    TS,
    URL,
    flat_snapshot,
    lost_bytes,
    snapshots,
    tree_hashes,
)
from tests.helpers.storage import sha, write_tree

EXTRACTORS = {
    "index.json": "index", "index.html": "index", "output.html": "dom",
    "screenshot.png": "screenshot", "headers.json": "headers", "warc/1600000000.warc.gz": "warc",
    "www.example.com/blog/post.html": "wget", "cdn.other-host.net/jquery.js": "wget",
    "notes.txt": "unknown", "sources/list.txt": "unknown", "dom": "unknown",
}


@pytest.mark.unit
def test_to_cas_stores_every_file_and_leaves_a_compatibility_link(sqlite_storage: StorageParts) -> None:
    storage = sqlite_storage
    sid, folder = flat_snapshot(storage)

    step = to_cas(storage.catalog, storage.primary, storage.views, work=storage.work, layout=storage.layout,
                  snapshot_id=sid)

    assert step.errors == [] and step.to_version == "cas" and step.files_ingested == len(FLAT)
    assert os.readlink(folder) == f"by_timestamp/{TS}"
    with storage.catalog.transaction() as tx:
        rows = {r[3]: (r[2], r[4]) for r in tx.files.snapshot_file_rows(sid)}
    # Every file at its own path; which extractor wrote it is metadata.
    assert rows == {rel: (EXTRACTORS[rel], sha(data)) for rel, data in FLAT.items()}
    for rel, data in FLAT.items():  # the old path opens the same bytes, through the link
        assert (folder / rel).read_bytes() == data
    assert verify_storage(storage.catalog, storage.primary, storage.views).problems == 0
    # The emptied folder was moved aside in one piece, for gc to delete after the grace.
    [moved] = storage.layout.migrated.glob(f"*/{TS}")
    assert sorted(tree_hashes(moved).values()) == sorted(sha(data) for data in FLAT.values())
    assert to_cas(storage.catalog, storage.primary, storage.views, work=storage.work, layout=storage.layout,
                  snapshot_id=sid).to_version == "cas"  # idempotent


@pytest.mark.unit
def test_to_cas_keeps_the_folder_when_a_file_cannot_be_stored(sqlite_storage: StorageParts) -> None:
    sid, folder = flat_snapshot(sqlite_storage)
    odd = os.fsdecode(b"odd-\xff-name.txt")
    (folder / odd).write_bytes(b"not utf-8 named")
    before = tree_hashes(folder)

    step = migrate_snapshot(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                            work=sqlite_storage.work, layout=sqlite_storage.layout, snapshot_id=sid)

    assert step.to_version == "0.4" and step.steps == ["to_cas"]
    assert any("not valid UTF-8" in error for error in step.errors)
    assert folder.is_dir() and not folder.is_symlink()
    assert tree_hashes(folder) == before  # untouched
    assert to_cas(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                  work=sqlite_storage.work, layout=sqlite_storage.layout,
                  snapshot_id=sid).to_version == "0.4"  # a rerun reports it again
    assert tree_hashes(folder) == before


def test_migrate_batch_takes_a_generated_collection_into_the_store(storage: StorageParts) -> None:
    manifest = generate_collection(storage.settings.data_dir, ReleaseMix(releases=ALL_RELEASES),
                                   snapshots=25, seed=21)
    import_orphans(storage.catalog, storage.layout)
    ids = [s.id for s in snapshots(storage).values()]

    report = migrate_batch(storage.catalog, storage.primary, storage.views,
                           work=storage.work, layout=storage.layout, snapshot_ids=ids)

    assert (report.processed, report.migrated, report.failed) == (25, 25, 0), report.errors
    assert {s.fs_version for s in snapshots(storage).values()} == {"cas"}
    assert all(p.is_symlink() for p in storage.layout.archive.iterdir() if p.name[0].isdigit())
    assert lost_bytes(storage, manifest) == []
    assert verify_storage(storage.catalog, storage.primary, storage.views).problems == 0
    again = migrate_batch(storage.catalog, storage.primary, storage.views,
                          work=storage.work, layout=storage.layout, snapshot_ids=ids)
    assert (again.migrated, again.failed) == (0, 0)


def test_an_ingest_that_fails_reports_every_snapshot_and_moves_nothing(
        sqlite_storage: StorageParts, monkeypatch: pytest.MonkeyPatch) -> None:
    generate_collection(sqlite_storage.settings.data_dir, ReleaseMix(releases=ALL_RELEASES),
                        snapshots=6, seed=5)
    import_orphans(sqlite_storage.catalog, sqlite_storage.layout)
    before = tree_hashes(sqlite_storage.layout.archive)
    real = cas_module.ingest_files

    def fail_midway(*parts: object, **kwargs: object) -> object:
        items: Iterator[IngestItem] = kwargs["items"]  # type: ignore[assignment]
        taken = [next(iter(items)) for _ in range(3)]  # the folders are listed lazily
        assert taken
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(cas_module, "ingest_files", fail_midway)

    report = migrate_batch(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                           work=sqlite_storage.work, layout=sqlite_storage.layout,
                           snapshot_ids=[s.id for s in snapshots(sqlite_storage).values()])

    assert (report.processed, report.migrated, report.failed) == (6, 0, 6)
    assert all("No space left on device" in error for error in report.errors)
    assert {s.fs_version for s in snapshots(sqlite_storage).values()} != {"cas"}
    assert tree_hashes(sqlite_storage.layout.archive) == before
    monkeypatch.setattr(cas_module, "ingest_files", real)
    again = migrate_batch(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                          work=sqlite_storage.work, layout=sqlite_storage.layout,
                          snapshot_ids=[s.id for s in snapshots(sqlite_storage).values()])
    assert (again.migrated, again.failed) == (6, 0), again.errors


def test_busy_missing_and_special_snapshots(sqlite_storage: StorageParts) -> None:
    storage = sqlite_storage
    sid, folder = flat_snapshot(storage)
    repo = Catalog(storage.catalog.engine)
    folderless = repo.snapshots.add_snapshot(url=URL, timestamp="1600000001", fs_version="0.x").id
    missing = repo.snapshots.add_snapshot(url=URL, timestamp="1600000002", fs_version="0.6").id
    write_tree(storage.layout.archive / "1600000003", {"dom/output.html": b"organized by legacy_cas"})
    old_label = repo.snapshots.add_snapshot(url=URL, timestamp="1600000003", fs_version="0.4").id
    with storage.catalog.transaction() as tx:  # a label older versions wrote; the catalog refuses it now
        tx.session.execute(text("UPDATE snapshot SET fs_version = 'legacy' WHERE id = :id"),
                           {"id": old_label})

    with folder_lock(folder) as problem:
        assert problem is None
        report = migrate_batch(storage.catalog, storage.primary, storage.views,
                               work=storage.work, layout=storage.layout,
                               snapshot_ids=[sid, folderless, missing, old_label, "no-such-id"])

    by_id = {step.snapshot_id: step for step in report.snapshots}
    assert by_id[sid].skipped == "folder busy (another run is working on it)"
    assert by_id[folderless].skipped == "no folder" and by_id[folderless].to_version == "0.x"
    assert "missing" in by_id[missing].errors[0]
    assert by_id[old_label].to_version == "cas"
    assert (report.processed, report.migrated, report.skipped, report.failed) == (4, 1, 2, 2)
    assert migrate_snapshot(storage.catalog, storage.primary, storage.views,
                            work=storage.work, layout=storage.layout, snapshot_id=sid).to_version == "cas"
    with pytest.raises(KeyError):
        migrate_snapshot(storage.catalog, storage.primary, storage.views,
                         work=storage.work, layout=storage.layout, snapshot_id="no-such-id")


@pytest.mark.unit
def test_a_flat_file_and_an_extractor_folder_keep_their_own_paths(sqlite_storage: StorageParts) -> None:
    files = {k: v for k, v in FLAT.items() if k != "dom"}
    sid, folder = flat_snapshot(sqlite_storage, {**files, "dom/output.html": b"another dom"})

    step = migrate_snapshot(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                            work=sqlite_storage.work, layout=sqlite_storage.layout, snapshot_id=sid)

    assert (step.to_version, step.steps, step.errors) == ("cas", ["to_cas"], [])
    assert (folder / "output.html").read_bytes() == FLAT["output.html"]
    assert (folder / "dom" / "output.html").read_bytes() == b"another dom"


@pytest.mark.unit
def test_symlinks_in_a_snapshot_folder_are_recorded_and_it_migrates(
        sqlite_storage: StorageParts, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"not the archive's")
    sid, folder = flat_snapshot(sqlite_storage, {k: v for k, v in FLAT.items() if k != "dom"})
    (folder / "dom").symlink_to(outside, target_is_directory=True)  # hostile: dom -> elsewhere
    (folder / "latest.html").symlink_to("output.html")  # points inside: kept as a link
    (folder / "warc" / "latest.warc.gz").symlink_to("1600000000.warc.gz")
    (folder / "media").mkdir()  # an extractor's output folder left empty

    step = migrate_snapshot(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                            work=sqlite_storage.work, layout=sqlite_storage.layout, snapshot_id=sid)

    assert (step.to_version, step.errors) == ("cas", [])
    assert step.links == 3 and any("points outside" in w for w in step.warnings)
    assert [p.name for p in outside.iterdir()] == ["secret.txt"]  # never followed or written
    with sqlite_storage.catalog.reading() as tx:
        links = {rel: (target, inside) for rel, kind, target, inside
                 in tx.adoption.snapshot_entries([sid])[sid] if kind == "symlink"}
    assert links == {"dom": (str(outside), False), "latest.html": ("output.html", True),
                     "warc/latest.warc.gz": ("1600000000.warc.gz", True)}
    assert os.readlink(folder / "latest.html") == "output.html"  # through the compat link
    assert (folder / "latest.html").read_bytes() == FLAT["output.html"]
    assert (folder / "warc" / "latest.warc.gz").read_bytes() == FLAT["warc/1600000000.warc.gz"]
    assert not os.path.lexists(folder / "dom")
    assert (folder / "media").is_dir()  # an empty folder the snapshot had (pages link to it)
    assert verify_storage(sqlite_storage.catalog, sqlite_storage.primary,
                          sqlite_storage.views).problems == 0
    assert migrate_snapshot(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                            work=sqlite_storage.work, layout=sqlite_storage.layout,
                            snapshot_id=sid).errors == []  # a rerun: nothing to do
    # Rebuilding the views from the catalog, or vacuuming them, keeps both.
    rebuild_views(sqlite_storage.catalog, sqlite_storage.primary,
                  sqlite_storage.views, work=sqlite_storage.work,
                  clean=True)
    assert os.readlink(folder / "latest.html") == "output.html" and (folder / "media").is_dir()
    os.rmdir(folder / "media")
    (folder / "latest.html").unlink()
    broken = verify_storage(sqlite_storage.catalog, sqlite_storage.primary,
                            sqlite_storage.views).found
    assert broken["missing_links"] == 2
    assert verify_storage(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                          fix=True, vacuum=True).problems == 0
    assert os.readlink(folder / "latest.html") == "output.html" and (folder / "media").is_dir()
    assert verify_storage(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                          vacuum=True).problems == 0
    assert (folder / "media").is_dir()


INDEX_FOLDER = {  # wget saved a path `index/`: its files keep their own names
    "index/index.html": b"<html>wget's index/ page</html>",
    "index/index.json": b'{"wget": "index/index.json"}',
    "index/style.css": b"body {}",
}


TWINS = {"twin-a.html": b"<html>the same bytes in two files</html>",
         "twin-b.html": b"<html>the same bytes in two files</html>"}


@pytest.mark.unit
def test_an_edit_of_the_twin_that_is_not_the_blob_keeps_the_folder(
        sqlite_storage: StorageParts, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two identical files, hard-linked at ingest: the blob is one twin's inode. The other
    twin edited in place (same size) after the ingest stored it and before the folder is
    retired must be re-hashed and keep the folder, though its blob was already found good."""
    storage = sqlite_storage
    sid, folder = flat_snapshot(storage, {**FLAT, **TWINS})
    blob = storage.primary.store.local_path(sha(TWINS["twin-a.html"]))
    edited: list[str] = []
    real = cas_module.ingest_files

    def ingest_then_edit(*parts: object, **kwargs: object) -> object:
        report = real(*parts, **kwargs)  # type: ignore[arg-type]
        for rel in TWINS:  # the twin that is a file of its own, not the blob's inode
            if not os.path.samefile(folder / rel, blob):
                os.chmod(folder / rel, 0o644)
                with open(folder / rel, "r+b") as handle:
                    handle.write(b"X")
                edited.append(rel)
        return report
    monkeypatch.setattr(cas_module, "ingest_files", ingest_then_edit)

    step = to_cas(storage.catalog, storage.primary, storage.views, work=storage.work, layout=storage.layout,
                  snapshot_id=sid)

    assert len(edited) == 1, "one twin is the blob's inode, the other a file of its own"
    assert step.to_version == "0.4" and folder.is_dir() and not folder.is_symlink(), step
    assert any(e.startswith(f"to_cas: {edited[0]}: content differs") for e in step.errors), \
        f"the edit of {edited[0]} went unnoticed: {step.errors}"
    assert (folder / edited[0]).read_bytes().startswith(b"X")  # the edit is still there
    assert not list(storage.layout.migrated.glob("*/*"))


@pytest.mark.unit
def test_a_top_level_index_folder_keeps_its_paths(sqlite_storage: StorageParts) -> None:
    storage = sqlite_storage
    sid, folder = flat_snapshot(storage, {**FLAT, **INDEX_FOLDER})

    step = migrate_snapshot(storage.catalog, storage.primary, storage.views,
                            work=storage.work, layout=storage.layout, snapshot_id=sid)

    assert (step.to_version, step.errors) == ("cas", [])
    with storage.catalog.transaction() as tx:
        rows = {r[3]: r[4] for r in tx.files.snapshot_file_rows(sid)}
    assert rows == {rel: sha(data) for rel, data in {**FLAT, **INDEX_FOLDER}.items()}
    assert (folder / "index.html").read_bytes() == FLAT["index.html"]
    assert (folder / "index" / "index.html").read_bytes() == INDEX_FOLDER["index/index.html"]


@pytest.mark.unit
def test_a_file_changed_after_it_was_stored_is_never_removed_as_verified(
        sqlite_storage: StorageParts) -> None:
    """Same size, other bytes: the check before retiring a folder compares content."""
    storage = sqlite_storage
    sid, folder = flat_snapshot(storage)
    assert migrate_batch(storage.catalog, storage.primary, storage.views,
                         work=storage.work, layout=storage.layout,
                         snapshot_ids=[sid], retire=False).failed == 0  # stored, folder kept
    with open(folder / "notes.txt", "r+b") as handle:  # an edit in place, same length
        handle.write(b"A")
    edited = (folder / "notes.txt").read_bytes()
    (folder / "added.txt").write_bytes(b"a file that turned up later")

    step = to_cas(storage.catalog, storage.primary, storage.views, work=storage.work, layout=storage.layout,
                  snapshot_id=sid)

    assert step.to_version == "0.4" and folder.is_dir() and not folder.is_symlink()
    assert any(e.startswith("to_cas: notes.txt:") for e in step.errors), step.errors
    assert (folder / "notes.txt").read_bytes() == edited
    assert (folder / "added.txt").exists()
    # The stored original stays referenced: gc cannot collect it.
    with storage.catalog.transaction() as tx:
        rows = {r[3]: r[4] for r in tx.files.snapshot_file_rows(sid)}
    assert rows["notes.txt"] == sha(FLAT["notes.txt"])
