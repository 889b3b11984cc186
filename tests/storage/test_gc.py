import os
import time
from pathlib import Path

import pytest
from sqlalchemy import delete, select, update

from archive_pipelines.catalog.models import Blob, BlobCopy
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.file_ingest import IngestItem, ingest_directory, ingest_file, ingest_files
from archive_pipelines.storage.gc import GcItem, GcReport, collect_garbage
from archive_pipelines.storage.removal import delete_snapshot, remove_file
from archive_pipelines.storage.retired import retire_folder
from archive_pipelines.storage.verify import verify_storage
from tests.helpers.storage import add_snapshot, sha, write_tree


def test_gc_removes_only_unreferenced_blobs_past_grace(storage: StorageParts, tmp_path: Path) -> None:
    sid = add_snapshot(storage)
    src = write_tree(tmp_path / "src", {"keep": b"keep", "drop": b"drop"})
    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                     snapshot_id=sid, extractor="wget", directory=src,
                     hardlink=False)  # a copy: its removal frees its bytes
    remove_file(storage.catalog, storage.views, sid, relative_path="wget/drop")

    within_grace = collect_garbage(storage.catalog, storage.primary, storage.views.farm,
                                   layout=storage.layout,
                                   grace_hours=1)
    assert within_grace.removed == 0
    assert storage.primary.store.exists(sha(b"drop"))

    dry = collect_garbage(storage.catalog, storage.primary, storage.views.farm, layout=storage.layout,
                          grace_hours=0, dry_run=True)
    assert dry.candidates == 1 and storage.primary.store.exists(sha(b"drop"))

    done = collect_garbage(storage.catalog, storage.primary, storage.views.farm, layout=storage.layout,
                           grace_hours=0)
    assert done.removed == 1 and done.bytes_freed == 4
    assert not storage.primary.store.exists(sha(b"drop"))
    assert storage.primary.store.exists(sha(b"keep"))
    with storage.catalog.transaction() as tx:
        status = tx.session.scalar(select(BlobCopy.status).join(Blob, Blob.id == BlobCopy.blob_id)
                                .where(Blob.sha256 == sha(b"drop")))
    assert status == "missing"

    # the same bytes ingested again revive the blob and its file
    ingest_file(storage.catalog, storage.primary, storage.views, work=storage.work,
                snapshot_id=sid, extractor="wget", relative_path="again", source=src / "drop")
    assert storage.primary.store.exists(sha(b"drop"))
    assert (storage.layout.archive / "by_timestamp" / "1735142400.1" / "wget" /
            "again").read_bytes() == b"drop"


@pytest.mark.unit
def test_gc_removes_old_untracked_files_only(sqlite_storage: StorageParts) -> None:
    put = sqlite_storage.primary.store.put_bytes(b"orphan file from a crashed ingest")
    assert collect_garbage(sqlite_storage.catalog, sqlite_storage.primary,
                           sqlite_storage.views.farm, layout=sqlite_storage.layout,
                           grace_hours=0).untracked_removed == 0  # opt-in
    assert sqlite_storage.primary.store.exists(put.sha256)
    assert collect_garbage(sqlite_storage.catalog, sqlite_storage.primary,
                           sqlite_storage.views.farm, layout=sqlite_storage.layout,
                           grace_hours=1, untracked=True).untracked_removed == 0
    assert collect_garbage(sqlite_storage.catalog, sqlite_storage.primary,
                           sqlite_storage.views.farm, layout=sqlite_storage.layout,
                           grace_hours=0, untracked=True).untracked_removed == 1
    assert not sqlite_storage.primary.store.exists(put.sha256)


def _disk(storage: StorageParts) -> dict[str, tuple[int, int, int, int, int]]:
    """Every path under the data dir but the catalog's files: (mode, size, nlink, inode,
    mtime); what a dry run must leave as it found it."""
    listing = {}
    root = storage.layout.root
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            if name.startswith("catalog.sqlite3"):
                continue
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            listing[os.path.relpath(path, root)] = (st.st_mode, st.st_size, st.st_nlink,
                                                    st.st_ino, st.st_mtime_ns)
    return listing


def _rows(storage: StorageParts) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with storage.catalog.reading() as tx:
        blobs = [tuple(r) for r in tx.session.execute(
            select(Blob.id, Blob.sha256, Blob.size, Blob.ref_count, Blob.unreferenced_since)
            .order_by(Blob.id))]
        copies = [tuple(r) for r in tx.session.execute(
            select(BlobCopy.blob_id, BlobCopy.store_id, BlobCopy.status, BlobCopy.mtime)
            .order_by(BlobCopy.blob_id, BlobCopy.store_id))]
    return blobs, copies


def _legacy(storage: StorageParts, name: str, files: dict[str, bytes]) -> tuple[Path, list[Path]]:
    folder = write_tree(storage.layout.root / "legacy" / name, files)
    return folder, [folder / rel for rel in files]


GRACE_S = 3.0


def test_dry_run_lists_exactly_what_the_real_run_removes(storage: StorageParts,
                                                        tmp_path: Path) -> None:
    layout = storage.layout
    kept_sid = add_snapshot(storage, timestamp="1.0")
    old_sid = add_snapshot(storage, url="https://example.com/old", timestamp="2.0")
    new_sid = add_snapshot(storage, url="https://example.com/new", timestamp="3.0")
    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work, snapshot_id=kept_sid,
                     extractor="wget",
                     directory=write_tree(tmp_path / "kept", {"k1": b"kept one", "shared": b"shared"}))
    # Garbage past the grace: a copied blob (its removal frees its bytes) and one
    # hard-linked from a legacy folder (the store's name goes, the legacy file keeps the
    # inode: nothing freed). `shared` stays referenced by the kept snapshot.
    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work, snapshot_id=old_sid,
                     extractor="wget",
                     directory=write_tree(tmp_path / "old", {"copied": b"old copied", "shared": b"shared"}),
                     hardlink=False)
    linked_folder, linked_files = _legacy(storage, "1500000000.1",
                                          {"linked.html": b"old linked", "kept.html": b"kept one"})
    ingest_files(storage.catalog, storage.primary, storage.views, work=storage.work,
                 items=[IngestItem(old_sid, "wget", "linked.html", linked_files[0])],
                 hardlink=True)
    assert os.stat(linked_files[0]).st_ino == os.stat(
        storage.primary.store.local_path(sha(b"old linked"))).st_ino
    delete_snapshot(storage.catalog, storage.views, old_sid)
    # Untracked files past the grace: one left by a crashed copy, one by a crashed
    # hard-linking ingest (its source still holds the inode).
    orphan = storage.primary.store.put_bytes(b"orphan of a crashed ingest").sha256
    held_src = write_tree(tmp_path / "held", {"f": b"orphan hard-linked"}) / "f"
    held = storage.primary.store.put_file(held_src, allow_hardlink=True).sha256
    # A legacy folder moved aside past the grace: one file only it holds, one hard-linked
    # to the blob collected above (freed once the blob pass unlinked the store's names),
    # one whose bytes the store keeps (a referenced blob's legacy source).
    os.link(storage.primary.store.local_path(sha(b"kept one")), linked_folder / "referenced.html")
    (linked_folder / "only-here.txt").write_bytes(b"12345")
    old_folder = retire_folder(layout.migrated, linked_folder,
                               [*linked_files, linked_folder / "referenced.html",
                                linked_folder / "only-here.txt"])
    assert old_folder is not None
    time.sleep(GRACE_S + 0.5)

    # Within the grace: a blob unreferenced just now, an untracked file, a moved folder.
    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work, snapshot_id=new_sid,
                     extractor="wget",
                     directory=write_tree(tmp_path / "new", {"recent": b"recently dropped"}))
    delete_snapshot(storage.catalog, storage.views, new_sid)
    recent_orphan = storage.primary.store.put_bytes(b"an ingest is about to commit me").sha256
    new_folder, new_files = _legacy(storage, "1700000000.1", {"a.html": b"new legacy"})
    recent_folder = retire_folder(layout.migrated, new_folder, new_files)
    assert recent_folder is not None
    started = time.monotonic()

    disk_before, rows_before = _disk(storage), _rows(storage)
    said: list[GcItem] = []
    dry = collect_garbage(storage.catalog, storage.primary, storage.views.farm, layout=storage.layout,
                          grace_hours=GRACE_S / 3600, dry_run=True, untracked=True,
                          on_item=said.append)
    assert _disk(storage) == disk_before  # the dry run changed nothing on disk
    assert _rows(storage) == rows_before  # nor in the catalog
    done: list[GcItem] = []
    real = collect_garbage(storage.catalog, storage.primary, storage.views.farm, layout=storage.layout,
                           grace_hours=GRACE_S / 3600, untracked=True,
                           on_item=done.append)
    assert time.monotonic() - started < GRACE_S, "too slow: the recent items aged past the grace"

    def kind(items: list[GcItem], name: str) -> set[tuple[str, int, bool]]:
        return {(i.name, i.size, i.held) for i in items if i.kind == name}

    for name in ("blob", "untracked", "folder"):
        assert kind(done, name) == kind(said, name), name
    assert kind(said, "blob") == {(sha(b"old copied"), 10, False),
                                  (sha(b"old linked"), 10, True)}
    assert kind(said, "untracked") == {(orphan, 26, False), (held, 18, True)}
    # linked.html (10, once the blob is gone), kept.html (8, a copy), only-here.txt (5);
    # referenced.html's 8 bytes stay: the store holds them
    assert kind(said, "folder") == {(str(old_folder), 10 + 8 + 5, False)}
    for tally in ("blobs", "untracked", "folders"):
        assert getattr(dry, tally) == getattr(real, tally), tally
    assert (dry.candidates, dry.already_gone) == (real.candidates, real.already_gone) == (2, 0)
    assert real.folders.held == 1 and real.folders.held_bytes == 8
    assert real.revived == 0 and not real.errors and not dry.errors
    assert dry.total_bytes_freed == real.total_bytes_freed == 10 + 26 + 23

    # What was garbage is gone; what was not is all there.
    for gone in (sha(b"old copied"), sha(b"old linked"), orphan, held):
        assert not storage.primary.store.exists(gone)
    assert not old_folder.exists()
    assert held_src.read_bytes() == b"orphan hard-linked"
    for kept in (sha(b"kept one"), sha(b"shared"), sha(b"recently dropped"), recent_orphan):
        assert storage.primary.store.exists(kept)
    assert (recent_folder / "a.html").read_bytes() == b"new legacy"
    # The one problem left is the untracked file still within the grace: gc keeps it, and
    # verify does not call the store healthy while a blob file is untracked.
    after = verify_storage(storage.catalog, storage.primary, storage.views)
    assert after.problems == after.found["untracked_blob_files"] == 1
    assert after.examples["untracked_blob_files"] == [recent_orphan]


@pytest.mark.parametrize("status", ["missing", "corrupted", "ongoing", None])
def test_referenced_blobs_are_never_removed(storage: StorageParts, tmp_path: Path,
                                            status: str | None) -> None:
    """ref_count > 0 keeps a blob's file whatever its primary copy says (a copy row
    `missing` / `corrupted` / `ongoing`, or none at all), even with no grace and
    --untracked."""
    sid = add_snapshot(storage)
    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work, snapshot_id=sid,
                     extractor="wget",
                     directory=write_tree(tmp_path / "src", {"odd": b"odd copy row", "ok": b"plain"}))
    odd = sha(b"odd copy row")
    with storage.catalog.transaction() as tx:
        blob_id = tx.session.scalar(select(Blob.id).where(Blob.sha256 == odd))
        if status is None:
            tx.session.execute(delete(BlobCopy).where(BlobCopy.blob_id == blob_id))
        else:
            tx.session.execute(update(BlobCopy).where(BlobCopy.blob_id == blob_id)
                            .values(status=status))
        # a stale gc clock on a referenced blob must not matter either
        tx.session.execute(update(Blob).values(unreferenced_since=Blob.created_at))
    rows_before = _rows(storage)
    said: list[GcItem] = []
    dry = collect_garbage(storage.catalog, storage.primary, storage.views.farm, layout=storage.layout,
                          grace_hours=0, dry_run=True, untracked=True,
                          on_item=said.append)
    real = collect_garbage(storage.catalog, storage.primary, storage.views.farm, layout=storage.layout,
                           grace_hours=0, untracked=True)
    assert said == [] and dry.candidates == real.candidates == 0
    assert (real.removed, real.untracked_removed) == (0, 0)
    assert storage.primary.store.local_path(odd).read_bytes() == b"odd copy row"
    assert storage.primary.store.exists(sha(b"plain"))
    assert _rows(storage) == rows_before


@pytest.mark.unit
def test_an_ingest_recording_an_untracked_file_while_gc_removes_it(sqlite_storage: StorageParts,
                                                                  tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    """The race the grace cannot cover: an ingest finds an old untracked file with its bytes
    (and does not rewrite it), gc removes the file, then the ingest commits. gc gives the
    file a catalog row first, so the ingest's commit revives it and writes it again."""
    storage = sqlite_storage
    data = b"bytes a crashed ingest left behind"
    storage.primary.store.put_bytes(data)
    src = write_tree(tmp_path / "src", {"page.html": data})
    reports: list[GcReport] = []
    real_sync = storage.primary.store.sync_pending

    def gc_before_the_commit() -> None:
        if not reports:  # between the ingest's put (file found) and its catalog commit
            reports.append(collect_garbage(storage.catalog, storage.primary,
                                           storage.views.farm, layout=storage.layout,
                                           grace_hours=0, untracked=True))
        real_sync()

    monkeypatch.setattr(storage.primary.store, "sync_pending", gc_before_the_commit)
    report = ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                              snapshot_id=add_snapshot(storage), extractor="wget", directory=src,
                              hardlink=False)
    assert report.new_blobs == 0  # gc's row: the ingest found the blob recorded
    assert reports[0].untracked_removed == 1  # gc did remove the file...
    assert storage.primary.store.local_path(sha(data)).read_bytes() == data  # ...the ingest put it back
    assert verify_storage(storage.catalog, storage.primary, storage.views).problems == 0


@pytest.mark.unit
def test_collecting_a_hard_linked_blob_frees_nothing(sqlite_storage: StorageParts,
                                                     tmp_path: Path) -> None:
    storage = sqlite_storage
    sid = add_snapshot(storage)
    legacy = write_tree(tmp_path / "legacy", {"a.html": b"legacy page"}) / "a.html"
    ingest_files(storage.catalog, storage.primary, storage.views, work=storage.work,
                 items=[IngestItem(sid, "wget", "a.html", legacy)], hardlink=True)
    delete_snapshot(storage.catalog, storage.views, sid)
    done = collect_garbage(storage.catalog, storage.primary, storage.views.farm, layout=storage.layout,
                           grace_hours=0)
    assert (done.removed, done.blobs.held, done.bytes_freed, done.blobs.held_bytes) == (1, 1, 0, 11)
    assert not storage.primary.store.exists(sha(b"legacy page"))
    assert legacy.read_bytes() == b"legacy page" and os.stat(legacy).st_nlink == 1
