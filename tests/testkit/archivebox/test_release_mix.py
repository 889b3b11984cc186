from __future__ import annotations

import json
import os
import random
from collections import Counter
from pathlib import Path

import pytest

from archive_pipelines.legacy.index_json import InvalidFolder, LegacyIndex, load_index
from archive_pipelines.legacy.snapshot_folder import FolderFile, iter_folder
from archive_pipelines.legacy.sqlite_index import ArchiveBoxIndex
from archive_pipelines.legacy.versions import detect_version
from archive_testkit.archivebox import Manifest, ReleaseMix, generate_collection
from archive_testkit.archivebox.releases.release_outputs import shared_asset

ALL_RELEASES = ("0.4", "0.5", "0.6", "0.7", "0.8", "0.8.3", "0.9")


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    root = tmp_path_factory.mktemp("collection")
    return generate_collection(
        root,
        ReleaseMix(
            releases=ALL_RELEASES, broken=6, duplicates=3, shared_asset_fraction=0.5, with_sqlite=True
        ),
        snapshots=70,
        seed=7,
    )


def test_the_manifest_lists_exactly_the_files_on_disk(collection: Manifest) -> None:
    on_disk = {
        os.path.relpath(os.path.join(directory, name), collection.root)
        for directory, _, names in os.walk(collection.root)
        for name in names
    }
    assert on_disk == set(collection.files)
    sample = random.Random(1).sample(sorted(collection.files), 60)
    assert collection.mismatches(sample) == []
    for rel in sample:
        assert (collection.root / rel).stat().st_size == collection.files[rel].size


@pytest.mark.unit
def test_mismatches_notices_a_changed_or_missing_file(collection: Manifest, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    manifest = generate_collection(root, ReleaseMix(), snapshots=3, seed=3)
    victim, gone = sorted(manifest.files)[:2]
    (root / victim).write_bytes(b"changed")
    (root / gone).unlink()
    problems = manifest.mismatches()
    assert len(problems) == 2
    assert any(p.startswith(victim) and "sha256" in p for p in problems)
    assert any(p.startswith(gone) for p in problems)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("release", "present", "absent"),
    [
        ("0.4", {"history", "updated"}, {"snapshot_id", "tags_str", "snapshot_abid"}),
        ("0.5", {"history", "updated"}, {"snapshot_id", "icons"}),
        ("0.6", {"history", "updated", "snapshot_id", "tags_str", "icons"}, {"snapshot_abid"}),
        ("0.7", {"history", "updated", "snapshot_id", "tags_str"}, {"downloaded_at"}),
        ("0.8", {"history", "updated", "snapshot_id", "snapshot_abid"}, {"downloaded_at"}),
        ("0.8.3", {"history", "downloaded_at", "snapshot_abid"}, {"updated", "fs_version"}),
        ("0.9", {"archive_results", "fs_version"}, {"history"}),
    ],
)
def test_each_release_writes_its_fingerprint(
    collection: Manifest, release: str, present: set[str], absent: set[str]
) -> None:
    snapshots = [s for s in collection.snapshots if s.release == release and s.broken is None and s.has_index]
    assert snapshots
    for snapshot in snapshots:
        raw = json.loads((collection.root / snapshot.folder / "index.json").read_bytes())
        assert present <= raw.keys() and not absent & raw.keys()
        assert detect_version(raw) == snapshot.fs_version


@pytest.mark.unit
def test_good_folders_load_as_the_manifest_says(collection: Manifest) -> None:
    versions: Counter[str] = Counter()
    for snapshot in collection.snapshots:
        index = load_index(collection.root / snapshot.folder)
        if snapshot.broken or not snapshot.has_index:
            assert isinstance(index, InvalidFolder)
            assert index.reason == (snapshot.broken or "missing_index")
            continue
        assert isinstance(index, LegacyIndex), index
        assert (index.url, index.timestamp, index.title, index.tags) == (
            snapshot.url,
            snapshot.timestamp,
            snapshot.title,
            snapshot.tags,
        )
        assert index.fs_version == snapshot.fs_version
        assert index.warnings == ()
        assert index.results and "title" in index.results
        versions[index.fs_version] += 1
    assert set(versions) == {"0.4", "0.6", "0.8", "0.8.3", "0.9"}
    assert Counter(s.broken for s in collection.snapshots if s.broken) == {
        "missing_index": 2,
        "not_json": 2,
        "bad_url": 2,
    }


@pytest.mark.unit
def test_every_generated_file_is_classified_as_the_extractor_that_wrote_it(
    collection: Manifest,
) -> None:
    for snapshot in collection.snapshots:
        index = load_index(collection.root / snapshot.folder)
        url = index.url if isinstance(index, LegacyIndex) else None
        entries = list(iter_folder(collection.root / snapshot.folder, url))
        assert all(isinstance(entry, FolderFile) for entry in entries)
        for entry in entries:
            assert isinstance(entry, FolderFile)
            assert entry.extractor == collection.files[f"{snapshot.folder}/{entry.rel_path}"].extractor
    extractors = {f.extractor for f in collection.files.values()}
    assert {"wget", "unknown", "index", "dom", "screenshot", "warc", "favicon"} <= extractors


@pytest.mark.unit
def test_duplicates_are_exact_copies_under_another_folder_name(collection: Manifest) -> None:
    duplicates = [s for s in collection.snapshots if s.duplicate_of]
    assert len(duplicates) == 3
    for dup in duplicates:
        original = next(s for s in collection.snapshots if s.folder == dup.duplicate_of)
        assert (dup.url, dup.timestamp) == (original.url, original.timestamp)
        assert dup.folder.split("/")[1] != dup.timestamp  # the name had to differ
        index = load_index(collection.root / dup.folder)
        assert isinstance(index, LegacyIndex) and index.timestamp == original.timestamp
        mine = {
            p[len(dup.folder) :]: f.sha256
            for p, f in collection.files.items()
            if p.startswith(dup.folder + "/")
        }
        theirs = {
            p[len(original.folder) :]: f.sha256
            for p, f in collection.files.items()
            if p.startswith(original.folder + "/")
        }
        assert mine == theirs


@pytest.mark.unit
def test_shared_assets_repeat_byte_for_byte_across_hosts(collection: Manifest) -> None:
    jquery = shared_asset("jquery.min.js").sha256
    copies = [p for p, f in collection.files.items() if f.sha256 == jquery]
    assert len(copies) > 5
    assert len({p.split("/")[2] for p in copies}) > 1  # under several host folders
    assert collection.unique_bytes < collection.total_bytes


@pytest.mark.unit
def test_sqlite_knows_snapshots_whose_index_json_is_missing(collection: Manifest) -> None:
    assert collection.sqlite_variant == "0.8"  # the newest release's schema
    db_path = collection.root / "index.sqlite3"
    with ArchiveBoxIndex(db_path) as db:
        rows = {s.timestamp: s for s in db.iter_snapshots()}
    expected = {s.timestamp: s for s in collection.snapshots if s.in_sqlite}
    assert rows.keys() == expected.keys()
    orphans = [s for s in collection.snapshots if s.in_sqlite and not s.has_index]
    assert orphans
    for orphan in orphans:
        assert not (collection.root / orphan.folder / "index.json").exists()
        assert (collection.root / orphan.folder / "index.html").exists()
        row = rows[orphan.timestamp]
        assert (row.url, row.title, row.tags) == (orphan.url, orphan.title, orphan.tags)
        assert "title" in row.results


@pytest.mark.unit
@pytest.mark.parametrize(
    ("release", "variant"), [("0.5", "0.4"), ("0.7", "0.6"), ("0.8.3", "0.8"), ("0.9", "0.8")]
)
def test_each_sqlite_variant_reads_back(tmp_path: Path, release: str, variant: str) -> None:
    manifest = generate_collection(
        tmp_path, ReleaseMix(releases=(release,), with_sqlite=True), snapshots=12, seed=2
    )
    assert manifest.sqlite_variant == variant
    with ArchiveBoxIndex(tmp_path / "index.sqlite3") as db:
        rows = list(db.iter_snapshots())
        assert db.invalid_rows == []
    assert len(rows) == 12 + 1
    for row in rows:
        index = load_index(tmp_path / "archive" / row.timestamp)
        if isinstance(index, InvalidFolder):
            continue  # the sqlite-only snapshot
        assert (row.url, row.title, row.tags) == (index.url, index.title, index.tags)
        if variant != "0.4":  # 0.4 had no results table
            assert set(row.results) == set(index.results)
            assert row.results["dom"][0].start_ts == index.results["dom"][0].start_ts


@pytest.mark.unit
def test_same_seed_same_collection_and_manifest_round_trips(tmp_path: Path) -> None:
    one = generate_collection(tmp_path / "a", ReleaseMix(broken=3, duplicates=2), snapshots=15, seed=11)
    two = generate_collection(tmp_path / "b", ReleaseMix(broken=3, duplicates=2), snapshots=15, seed=11)
    assert {p: f.sha256 for p, f in one.files.items()} == {p: f.sha256 for p, f in two.files.items()}
    one.save(tmp_path / "manifest.json")
    again = Manifest.load(tmp_path / "manifest.json")
    assert again.files == one.files and again.snapshots == one.snapshots
    assert again.root == one.root


@pytest.mark.unit
def test_files_per_snapshot_is_roughly_honoured(tmp_path: Path) -> None:
    for wanted in (4, 10, 18):
        manifest = generate_collection(
            tmp_path / str(wanted),
            ReleaseMix(files_per_snapshot=wanted, shared_asset_fraction=0.0),
            snapshots=20,
            seed=5,
        )
        per_folder = len(manifest.files) / len(manifest.snapshots)
        assert wanted - 1 <= per_folder <= wanted + 3


@pytest.mark.unit
def test_unknown_releases_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown releases"):
        generate_collection(tmp_path, ReleaseMix(releases=("0.3",)), snapshots=1)
