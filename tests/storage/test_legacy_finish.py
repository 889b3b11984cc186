"""The check before a legacy folder is retired compares content, never sizes or inodes alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.ingest import ingest_directory
from archive_pipelines.storage.legacy_finish import FinishTask, verify_and_finish
from tests.storage.conftest import add_snapshot, sha, write_tree

FILES = {"index.html": b"<html>original</html>", "notes.txt": b"the user's notes"}


def _stored_folder(storage: StorageParts, *, hardlink: bool) -> tuple[Path, FinishTask]:
    """A legacy folder `archive/<ts>` whose files were ingested (as `files/<name>`), and the
    finish task that would retire it."""
    sid = add_snapshot(storage, timestamp="1600000000")
    folder = write_tree(storage.layout.archive / "1600000000", FILES)
    report = ingest_directory(storage.catalog, storage.primary, storage.views, storage.work,
                              sid, "files", folder, hardlink=hardlink)
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


def test_an_unchanged_folder_is_retired_and_linked(sqlite_storage: StorageParts) -> None:
    folder, task = _stored_folder(sqlite_storage, hardlink=True)

    assert verify_and_finish(sqlite_storage.primary.store, sqlite_storage.views.farm, task) == []

    assert os.readlink(folder) == "by_timestamp/1600000000"
    [moved] = sqlite_storage.layout.migrated.glob("*/1600000000")
    assert {p.name for p in moved.iterdir()} == set(FILES)


def test_a_file_that_turned_up_keeps_its_folder(sqlite_storage: StorageParts) -> None:
    folder, task = _stored_folder(sqlite_storage, hardlink=True)
    (folder / "late.txt").write_bytes(b"written after the listing")

    problems = verify_and_finish(sqlite_storage.primary.store, sqlite_storage.views.farm, task)

    assert problems and "late.txt" in problems[0]
    assert folder.is_dir() and not folder.is_symlink()
    assert (folder / "late.txt").read_bytes() == b"written after the listing"
