"""The check before a legacy folder is retired compares content, never sizes or inodes alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.file_ingest import ingest_directory
from archive_pipelines.storage.legacy_finish import FinishTask, verify_and_finish
from tests.helpers.storage import add_snapshot, sha, write_tree

FILES = {"index.html": b"<html>original</html>", "notes.txt": b"the user's notes"}


def _stored_folder(storage: StorageParts, *, hardlink: bool) -> tuple[Path, FinishTask]:
    """A legacy folder `archive/<ts>` whose files were ingested (as `files/<name>`), and the
    finish task that would retire it."""
    sid = add_snapshot(storage, timestamp="1600000000")
    folder = write_tree(storage.layout.archive / "1600000000", FILES)
    report = ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                              snapshot_id=sid, extractor="files", directory=folder, hardlink=hardlink)
    assert report.errors == [] and report.files == len(FILES)
    task = FinishTask(
        "1600000000", storage.layout.migrated,
        files=tuple((f"files/{name}", str(folder / name)) for name in FILES),
        records=tuple((f"files/{name}", sha(data), len(data)) for name, data in FILES.items()),
        ingest_errors=())
    return folder, task


def _edit_in_place(path: Path) -> bytes:
    """Other bytes, same size, same inode (as an editor writing in place would)."""
    os.chmod(path, 0o644)  # ingest made a hard-linked inode read-only
    with open(path, "r+b") as handle:
        handle.write(b"X")
    return path.read_bytes()


@pytest.mark.unit
@pytest.mark.parametrize("hardlink", [True, False], ids=["hardlinked", "copied"])
def test_a_file_changed_after_it_was_stored_keeps_its_folder(sqlite_storage: StorageParts,
                                                             hardlink: bool) -> None:
    storage = sqlite_storage
    folder, task = _stored_folder(storage, hardlink=hardlink)
    blob = storage.primary.store.local_path(sha(FILES["notes.txt"]))
    assert (os.stat(blob).st_ino == os.stat(folder / "notes.txt").st_ino) is hardlink

    edited = _edit_in_place(folder / "notes.txt")

    problems = verify_and_finish(storage.primary.store, storage.views.farm, task)
    assert len(problems) == 1 and problems[0].startswith("files/notes.txt:"), problems
    assert ("no longer hashes to its name" in problems[0]) is hardlink  # the blob itself changed
    assert folder.is_dir() and not folder.is_symlink()  # not retired, not linked
    assert (folder / "notes.txt").read_bytes() == edited
    assert not list(storage.layout.migrated.glob("*/*"))


@pytest.mark.unit
def test_an_unchanged_folder_is_retired_and_linked(sqlite_storage: StorageParts) -> None:
    folder, task = _stored_folder(sqlite_storage, hardlink=True)

    assert verify_and_finish(sqlite_storage.primary.store, sqlite_storage.views.farm, task) == []

    assert os.readlink(folder) == "by_timestamp/1600000000"
    [moved] = sqlite_storage.layout.migrated.glob("*/1600000000")
    assert {p.name for p in moved.iterdir()} == set(FILES)


@pytest.mark.unit
def test_a_file_that_turned_up_keeps_its_folder(sqlite_storage: StorageParts) -> None:
    folder, task = _stored_folder(sqlite_storage, hardlink=True)
    (folder / "late.txt").write_bytes(b"written after the listing")

    problems = verify_and_finish(sqlite_storage.primary.store, sqlite_storage.views.farm, task)

    assert problems and "late.txt" in problems[0]
    assert folder.is_dir() and not folder.is_symlink()
    assert (folder / "late.txt").read_bytes() == b"written after the listing"


TWINS = {"a/copy.html": b"<html>the same bytes twice</html>",
         "b/copy.html": b"<html>the same bytes twice</html>"}


@pytest.mark.unit
@pytest.mark.parametrize("blob_copy_first", [True, False], ids=["blob-copy-first", "blob-copy-last"])
def test_an_edited_twin_that_is_not_the_blob_keeps_its_folder(sqlite_storage: StorageParts,
                                                              blob_copy_first: bool) -> None:
    """Two identical files, one blob: the copy the blob was hard-linked from is the blob's
    inode, the other is a file of its own. An in-place edit of that other copy must be
    found by hashing it, whatever the order the files are checked in (the blob being
    already hashed for its twin proves nothing about this file)."""
    storage = sqlite_storage
    sid = add_snapshot(storage, timestamp="1600000000")
    folder = write_tree(storage.layout.archive / "1600000000", TWINS)
    report = ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                              snapshot_id=sid, extractor="files", directory=folder, hardlink=True)
    assert report.errors == [] and report.files == 2 and report.new_blobs == 1
    blob_inode = os.stat(storage.primary.store.local_path(sha(TWINS["a/copy.html"]))).st_ino
    same = [rel for rel in TWINS if os.stat(folder / rel).st_ino == blob_inode]
    assert len(same) == 1, "ingest hard-links the blob from exactly one of the twins"
    [other] = [rel for rel in TWINS if rel not in same]
    order = [*same, other] if blob_copy_first else [other, *same]

    edited = _edit_in_place(folder / other)

    task = FinishTask(
        "1600000000", storage.layout.migrated,
        files=tuple((f"files/{rel}", str(folder / rel)) for rel in order),
        records=tuple((f"files/{rel}", sha(data), len(data)) for rel, data in TWINS.items()),
        ingest_errors=())
    problems = verify_and_finish(storage.primary.store, storage.views.farm, task)
    assert problems == [f"files/{other}: content differs from the catalog's (changed since it "
                        "was stored?)"], f"the edited twin {other} was not caught: {problems}"
    assert folder.is_dir() and not folder.is_symlink()  # not retired, not linked
    assert (folder / other).read_bytes() == edited
    assert not list(storage.layout.migrated.glob("*/*"))
