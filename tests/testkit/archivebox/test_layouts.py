"""The one entry point: `generate_collection` writes the layout it is given, and only those."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from archive_testkit.archivebox import (
    SQLITE_NAME,
    Aged07,
    Collection07,
    Manifest,
    ReleaseMix,
    generate_collection,
)
from archive_testkit.archivebox.folders import FolderWriter


@pytest.mark.unit
def test_each_layout_writes_its_shape_and_returns_its_record(tmp_path: Path) -> None:
    aged = generate_collection(tmp_path / "aged", Aged07(files_per_snapshot=8), snapshots=3, seed=1)
    mix = generate_collection(tmp_path / "mix", ReleaseMix(releases=("0.4", "0.9")), snapshots=2, seed=1)
    assert isinstance(aged, Collection07) and isinstance(mix, Manifest)
    # Aged07: every folder in 0.7's shape, and the Django index.sqlite3 by default.
    assert (tmp_path / "aged" / SQLITE_NAME).is_file()
    for snapshot in aged.snapshots:
        document = json.loads((tmp_path / "aged" / snapshot.folder / "index.json").read_text())
        assert document["schema"] == "Link" and document["snapshot_id"] == snapshot.snapshot_id
    # ReleaseMix: the folders cycle through the releases asked for; no index.sqlite3 by default.
    assert not (tmp_path / "mix" / SQLITE_NAME).exists()
    assert [s.release for s in mix.snapshots] == ["0.4", "0.9"]
    assert "fs_version" in json.loads((tmp_path / "mix" / mix.snapshots[1].folder / "index.json").read_text())


@pytest.mark.unit
def test_the_same_seed_gives_the_same_bytes_and_a_layout_must_be_given(tmp_path: Path) -> None:
    first = generate_collection(tmp_path / "a", ReleaseMix(), snapshots=4, seed=3)
    second = generate_collection(tmp_path / "b", ReleaseMix(), snapshots=4, seed=3)
    assert {p: f.sha256 for p, f in first.files.items()} == {p: f.sha256 for p, f in second.files.items()}
    with pytest.raises(TypeError, match="Aged07"):
        generate_collection(tmp_path / "c", "0.7", snapshots=1)  # type: ignore[call-overload]
    assert not (tmp_path / "c").exists()


@pytest.mark.unit
def test_the_folder_writer_makes_folders_and_sets_the_mtime_asked_for(tmp_path: Path) -> None:
    writer = FolderWriter(tmp_path / "root")
    when = datetime(2023, 11, 20, 10, 2, 11, 512345, tzinfo=UTC)
    writer.write("archive/1/a/b.txt", b"x" * 3, mtime=when)
    writer.write("archive/1/c.txt", b"")
    writer.mkdir("archive/1/media")
    assert (tmp_path / "root/archive/1/a/b.txt").read_bytes() == b"xxx"
    assert os.stat(tmp_path / "root/archive/1/a/b.txt").st_mtime == when.timestamp()
    assert (tmp_path / "root/archive/1/c.txt").read_bytes() == b""
    assert (tmp_path / "root/archive/1/media").is_dir()
