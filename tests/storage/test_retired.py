"""Migrated legacy folders: moved aside in one rename, put back if they changed, and
deleted by gc only after the grace period."""

import errno
import os
from pathlib import Path

import pytest

from archive_pipelines.datadir.data_dir import DataDir
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.gc import collect_garbage
from archive_pipelines.storage.retired import FolderChanged, remove_retired, retire_folder
from tests.helpers.storage import write_tree

FILES = {"index.json": b"{}", "wget/a/index.html": b"<html>", "dom/output.html": b"dom"}


def legacy(root: Path, name: str = "1600000000.1") -> tuple[Path, list[Path]]:
    folder = write_tree(root / "archive" / name, FILES)
    os.symlink("index.json", folder / "link-to-index")  # a link is a file here too
    return folder, [folder / rel for rel in (*FILES, "link-to-index")]


@pytest.mark.unit
def test_a_verified_folder_moves_to_migrated_in_one_piece(tmp_path: Path) -> None:
    layout = DataDir(tmp_path)
    folder, verified = legacy(tmp_path)
    moved = retire_folder(layout.migrated, folder, verified)
    assert moved is not None and moved.parent.parent == layout.migrated
    assert not os.path.lexists(folder)
    assert (moved / "wget" / "a" / "index.html").read_bytes() == b"<html>"
    again, verified = legacy(tmp_path)  # the same name again: never overwrites
    second = retire_folder(layout.migrated, again, verified)
    assert second is not None and second.name == f"{folder.name}.1"


@pytest.mark.unit
def test_a_folder_with_an_unverified_file_is_put_back(tmp_path: Path) -> None:
    layout = DataDir(tmp_path)
    folder, verified = legacy(tmp_path)
    (folder / "wget" / "late.html").write_bytes(b"written after the check")
    with pytest.raises(FolderChanged, match=r"late\.html"):
        retire_folder(layout.migrated, folder, verified)
    assert (folder / "wget" / "late.html").read_bytes() == b"written after the check"
    assert (folder / "index.json").read_bytes() == b"{}"
    assert not any(layout.migrated.rglob("*.html"))


@pytest.mark.unit
def test_across_filesystems_the_caller_removes_in_place(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    folder, verified = legacy(tmp_path)

    def cross_device(_src: object, _dst: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")
    monkeypatch.setattr(os, "rename", cross_device)
    assert retire_folder(DataDir(tmp_path).migrated, folder, verified) is None
    assert (folder / "index.json").exists()


def test_gc_deletes_migrated_folders_only_after_the_grace(storage: StorageParts) -> None:
    layout = storage.layout
    moved = []
    for name in ("1500000000.1", "1600000000.1"):
        folder, verified = legacy(layout.root, name)
        moved.append(retire_folder(layout.migrated, folder, verified))
    assert all(path is not None and path.is_dir() for path in moved)

    kept = collect_garbage(storage.catalog, storage.primary, storage.views.farm, layout=storage.layout,
                           grace_hours=24)  # moved seconds ago: within the grace
    assert kept.migrated_folders_removed == 0 and all(p.exists() for p in moved if p)
    dry = collect_garbage(storage.catalog, storage.primary, storage.views.farm, layout=storage.layout,
                          grace_hours=0, dry_run=True)
    assert dry.migrated_folders_removed == 2 and all(p.exists() for p in moved if p)
    done = collect_garbage(storage.catalog, storage.primary, storage.views.farm, layout=storage.layout,
                           grace_hours=0)
    assert done.migrated_folders_removed == 2 and not done.errors, done.errors
    assert not any(p.exists() for p in moved if p)
    assert list(layout.migrated.iterdir()) == []  # emptied day folders go too
    assert remove_retired(layout.migrated, grace_hours=0).folders == 0
