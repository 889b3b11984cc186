"""Every verify failure mode produced on purpose, detected, then repaired."""

import os
from pathlib import Path

import pytest
from sqlalchemy import update

from archive_pipelines.catalog.models import Blob
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.file_ingest import IngestItem, ingest_directory, ingest_files
from archive_pipelines.storage.verify import verify_storage
from archive_pipelines.storage.view_rebuild import rebuild_views
from tests.helpers.storage import add_snapshot, sha, write_tree


def _populated(storage: StorageParts, tmp_path: Path) -> tuple[str, Path]:
    sid = add_snapshot(storage)
    src = write_tree(tmp_path / "src", {"index.html": b"<html>", "app.js": b"js", "c.css": b"c"})
    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work, snapshot_id=sid,
                     extractor="wget", directory=src)
    return sid, storage.layout.archive


def test_clean_storage_is_healthy(storage: StorageParts, tmp_path: Path) -> None:
    _populated(storage, tmp_path)
    report = verify_storage(storage.catalog, storage.primary, storage.views)
    assert report.problems == 0
    assert report.links_checked == 3 + 3 and report.blobs_checked == 3  # files + folders


def test_each_failure_mode_is_detected_and_repaired(storage: StorageParts, tmp_path: Path) -> None:
    _sid, archive = _populated(storage, tmp_path)
    ts_dir = archive / "by_timestamp" / "1735142400.1" / "wget"
    # 1. delete a link
    (ts_dir / "index.html").unlink()
    # 2. repoint a link elsewhere
    os.unlink(ts_dir / "app.js")
    os.symlink("../../../../cas/sha256/00/00/nowhere", ts_dir / "app.js")
    # 3. an orphan link
    orphan = archive / "by_date" / "20200101" / "ghost.test" / "x" / "wget" / "f"
    orphan.parent.mkdir(parents=True)
    os.symlink("../../../../../../cas/sha256/ab/cd/abcd", orphan)
    # 4. corrupt a ref_count
    with storage.catalog.transaction() as tx:
        tx.session.execute(update(Blob).where(Blob.sha256 == sha(b"c")).values(ref_count=7))
    # 5. delete a blob file (its alias, a hard link, still holds the bytes)
    blob_path = storage.primary.store.local_path(sha(b"js"))
    blob_path.unlink()
    # 6. delete a blob file and its aliases: nothing left to restore it from
    lost = storage.primary.store.local_path(sha(b"c"))
    lost.unlink()
    assert storage.views.farm.aliases.remove(sha(b"c")) == ["", ".css"]

    found = verify_storage(storage.catalog, storage.primary, storage.views)
    assert found.found["missing_links"] == 1
    assert found.found["wrong_links"] == 1
    assert found.found["orphan_links"] == 1
    assert found.found["refcount_drift"] == 1
    assert found.found["missing_blob_files"] == 2
    # c.css's 4 links are right but dangle: counted once as a missing blob file, not as
    # 4 broken links
    assert found.found["broken_links"] == 0

    fixed = verify_storage(storage.catalog, storage.primary, storage.views, fix=True, vacuum=True)
    assert fixed.fixed["missing_links"] == 1 and fixed.fixed["wrong_links"] == 1
    assert fixed.fixed["orphan_links"] == 1 and fixed.fixed["refcount_drift"] == 1
    assert fixed.fixed["missing_blob_files"] == 1  # restored from its alias
    assert blob_path.read_bytes() == b"js"
    assert not orphan.exists() and not orphan.parent.exists()
    assert (ts_dir / "index.html").read_bytes() == b"<html>"

    after = verify_storage(storage.catalog, storage.primary, storage.views)
    # the blob lost with its alias cannot be conjured back (no replica yet): still
    # reported, never hidden
    assert after.found["missing_blob_files"] == 1
    assert after.problems == 1
    assert after.found["refcount_drift"] == 0 and after.found["orphan_links"] == 0


def test_folder_links_of_the_other_views_are_checked_and_repaired(storage: StorageParts,
                                                                  tmp_path: Path) -> None:
    sid, archive = _populated(storage, tmp_path)
    by_domain = archive / "by_domain" / "example.com" / "20241225" / sid
    by_date = archive / "by_date" / "20241225" / "example.com" / sid
    by_user = archive / "by_user" / "squash" / "20241225" / "example.com" / sid
    by_domain.unlink()  # missing
    by_date.unlink()
    os.symlink("../../../by_timestamp/elsewhere", by_date)  # wrong
    by_user.unlink()  # an earlier version's per-file folder: links only
    (by_user / "wget").mkdir(parents=True)
    os.symlink("../../../../../../.s/xx/old", by_user / "wget" / "app.js")

    found = verify_storage(storage.catalog, storage.primary, storage.views)
    assert (found.found["missing_links"], found.found["wrong_links"],
            found.found["conflict_links"], found.found["orphan_links"]) == (1, 1, 1, 1)

    fixed = verify_storage(storage.catalog, storage.primary, storage.views, fix=True, vacuum=True)
    assert fixed.problems == 0
    for folder in (by_domain, by_date, by_user):
        assert (folder / "wget" / "app.js").read_bytes() == b"js"
    assert verify_storage(storage.catalog, storage.primary, storage.views).problems == 0


@pytest.mark.unit
def test_broken_link_to_existing_blob_path_and_conflicts(sqlite_storage: StorageParts,
                                                         tmp_path: Path) -> None:
    _sid, archive = _populated(sqlite_storage, tmp_path)
    ts_dir = archive / "by_timestamp" / "1735142400.1" / "wget"
    (ts_dir / "c.css").unlink()
    (ts_dir / "c.css").write_text("a real file the user put here")  # never clobbered
    report = verify_storage(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                            fix=True)
    assert report.found["conflict_links"] == 1 and report.fixed["conflict_links"] == 0
    assert (ts_dir / "c.css").read_text() == "a real file the user put here"


def test_untracked_blob_files_and_deep_check(sqlite_storage: StorageParts, tmp_path: Path) -> None:
    _populated(sqlite_storage, tmp_path)
    sqlite_storage.primary.store.put_bytes(b"left behind by a crash")
    path = sqlite_storage.primary.store.local_path(sha(b"<html>"))
    path.chmod(0o644)
    path.write_bytes(b"<htmX>")  # same size, flipped byte (alias shares the inode)
    shallow = verify_storage(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views)
    assert shallow.found["untracked_blob_files"] == 1
    assert shallow.found["corrupt_blob_files"] == 0
    deep = verify_storage(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                          deep=True)
    assert deep.found["corrupt_blob_files"] == 1


def test_rebuild_views_clean_and_subset(storage: StorageParts, tmp_path: Path) -> None:
    _sid, _archive = _populated(storage, tmp_path)
    report = rebuild_views(storage.catalog, storage.primary, storage.views, work=storage.work, clean=True,
                           only=("by_date",))
    assert report.links_removed == 1 and report.links_created == 1  # the folder link
    again = rebuild_views(storage.catalog, storage.primary, storage.views, work=storage.work)
    assert again.links_ok == 3 + 3 and again.links_created == 0
    assert verify_storage(storage.catalog, storage.primary, storage.views).problems == 0


@pytest.mark.unit
def test_lost_aliases_are_detected_and_recreated(sqlite_storage: StorageParts, tmp_path: Path) -> None:
    """The blob's plain alias and the `.js` one its link `app.js` points at."""
    _sid, archive = _populated(sqlite_storage, tmp_path)
    aliases = sqlite_storage.views.farm.aliases
    assert aliases.remove(sha(b"js")) == ["", ".js"]
    link = archive / "by_timestamp" / "1735142400.1" / "wget" / "app.js"
    assert link.is_symlink() and not link.exists()
    found = verify_storage(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views)
    assert found.found["missing_aliases"] == 2 and found.found["broken_links"] == 1
    report = verify_storage(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                            fix=True)
    assert report.found["missing_aliases"] == 2 and report.fixed["missing_aliases"] == 2
    assert report.found["broken_links"] == 0  # its alias made, the link is right
    assert link.read_bytes() == b"js" and aliases.extensions(sha(b"js")) == ["", ".js"]
    assert verify_storage(sqlite_storage.catalog, sqlite_storage.primary,
                          sqlite_storage.views).problems == 0


@pytest.mark.unit
def test_deep_verify_finds_a_hard_linked_blob_edited_through_its_legacy_path(
        sqlite_storage: StorageParts, tmp_path: Path) -> None:
    """Ingest hard-links the legacy file into the store (one inode, made read-only); whoever
    can write it anyway (root, or after a chmod) edits the blob. Same size, so only a
    deep verify, which hashes every blob, can tell."""
    storage = sqlite_storage
    original, edited = b"<html>original page</html>", b"<html>EDITED!! page</html>"
    assert len(original) == len(edited)
    legacy = write_tree(tmp_path / "legacy", {"index.html": original}) / "index.html"
    ingest_files(storage.catalog, storage.primary, storage.views, work=storage.work,
                 items=[IngestItem(add_snapshot(storage), "wget", "index.html", legacy)],
                 hardlink=True)
    blob = storage.primary.store.local_path(sha(original))
    assert os.stat(legacy).st_ino == os.stat(blob).st_ino
    assert os.stat(legacy).st_mode & 0o222 == 0  # read-only for everyone

    legacy.chmod(0o644)
    with open(legacy, "r+b") as handle:  # in place: same inode, same size
        handle.write(edited)
    assert blob.read_bytes() == edited and os.stat(blob).st_size == len(original)

    shallow = verify_storage(storage.catalog, storage.primary,
                             storage.views)  # checks the file is there, not what it holds
    assert shallow.found["corrupt_blob_files"] == 0 and shallow.problems == 0
    deep = verify_storage(storage.catalog, storage.primary, storage.views, deep=True)
    assert deep.found["corrupt_blob_files"] == 1 and deep.problems == 1
    assert deep.examples["corrupt_blob_files"] == [sha(original)]
    # The alias is the same inode: nothing to restore from, so it stays a problem.
    fixed = verify_storage(storage.catalog, storage.primary, storage.views, deep=True, fix=True)
    assert fixed.fixed["corrupt_blob_files"] == 0 and fixed.problems == 1
    assert verify_storage(storage.catalog, storage.primary, storage.views, deep=True).problems == 1
