"""The fs_version chain: organize (flat -> per-extractor folders), to_cas, batches, resumption."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

import archive_pipelines.migration.cas as cas_module
from archive_pipelines.catalog import CatalogRepository
from archive_pipelines.catalog.files import snapshot_file_rows
from archive_pipelines.legacy.generate import generate_collection
from archive_pipelines.migration import import_orphans, migrate_batch, migrate_snapshot, organize, to_cas
from archive_pipelines.migration.folders import TEMP_SUFFIX, folder_lock
from archive_pipelines.storage import Storage
from archive_pipelines.storage.ingest import IngestItem
from archive_pipelines.storage.verify import verify_storage
from tests.legacy.index_docs import v04
from tests.migration.conftest import ALL_RELEASES, lost_bytes, snapshots, tree_hashes
from tests.storage.conftest import sha, write_tree

URL = "https://www.example.com/blog/post"
TS = "1600000000"
FLAT = {
    "index.json": json.dumps(v04(url=URL, timestamp=TS)).encode(),
    "index.html": b"<html>index</html>",
    "output.html": b"<html>dom</html>",
    "screenshot.png": b"\x89PNG screenshot",
    "headers.json": b'{"status": 200}',
    "warc/1600000000.warc.gz": b"warc bytes",
    "www.example.com/blog/post.html": b"<html>wget</html>",
    "cdn.other-host.net/jquery.js": b"jquery()",
    "notes.txt": b"a user's notes",
    "sources/list.txt": b"https://www.example.com/blog/post\n",
    "dom": b"a flat file named like an extractor folder",
}
ORGANIZED = {
    "index.json": "index.json",
    "index.html": "index.html",
    "output.html": "dom/output.html",
    "screenshot.png": "screenshot/screenshot.png",
    "headers.json": "headers/headers.json",
    "warc/1600000000.warc.gz": "warc/1600000000.warc.gz",
    "www.example.com/blog/post.html": "wget/www.example.com/blog/post.html",
    "cdn.other-host.net/jquery.js": "wget/cdn.other-host.net/jquery.js",
    "notes.txt": "notes.txt",
    "sources/list.txt": "sources/list.txt",
    "dom": "unknown/dom",
}


def flat_snapshot(storage: Storage, files: dict[str, bytes] | None = None) -> tuple[str, Path]:
    folder = write_tree(storage.layout.archive / TS, files or FLAT)
    report = import_orphans(storage)
    assert report.imported == 1, report.errors
    return snapshots(storage)[TS].id, folder


def test_organize_moves_flat_files_into_extractor_folders(sqlite_storage: Storage) -> None:
    sid, folder = flat_snapshot(sqlite_storage)
    (folder / "link-to-notes").symlink_to("notes.txt")

    step = organize(sqlite_storage, sid)

    assert step.errors == [] and step.to_version == "organized" and step.steps == ["organize"]
    assert tree_hashes(folder) == {dst: sha(FLAT[src]) for src, dst in ORGANIZED.items()}
    assert os.readlink(folder / "link-to-notes") == "notes.txt"  # left alone, never followed
    assert not (folder / "www.example.com").exists()  # emptied host folders are removed
    assert snapshots(sqlite_storage)[TS].fs_version == "organized"
    again = organize(sqlite_storage, sid)  # organizing an organized folder changes nothing
    assert again.errors == [] and again.files_moved == 0
    assert tree_hashes(folder) == {dst: sha(FLAT[src]) for src, dst in ORGANIZED.items()}


def test_an_interrupted_organize_resumes_and_never_overwrites(sqlite_storage: Storage) -> None:
    sid, folder = flat_snapshot(sqlite_storage, {k: v for k, v in FLAT.items() if k != "dom"})
    # An earlier run copied two files (one as a real copy) and died; a temp file was left.
    write_tree(folder, {"dom/output.html": FLAT["output.html"], f"dom/x{TEMP_SUFFIX}": b"partial"})
    (folder / "screenshot").mkdir()
    os.link(folder / "screenshot.png", folder / "screenshot" / "screenshot.png")
    # Someone else's different bytes sit where headers.json must go.
    write_tree(folder, {"headers/headers.json": b"other bytes"})

    step = organize(sqlite_storage, sid)

    assert len(step.errors) == 1 and "headers.json" in step.errors[0] and "not overwritten" in step.errors[0]
    assert step.to_version == "0.4"  # not advanced: one file could not be verified
    assert (folder / "headers.json").read_bytes() == FLAT["headers.json"]
    assert (folder / "headers/headers.json").read_bytes() == b"other bytes"
    assert not (folder / "output.html").exists() and not (folder / f"dom/x{TEMP_SUFFIX}").exists()
    assert (folder / "dom/output.html").read_bytes() == FLAT["output.html"]
    os.unlink(folder / "headers/headers.json")
    assert organize(sqlite_storage, sid).to_version == "organized"


def test_to_cas_stores_every_file_and_leaves_a_compatibility_link(sqlite_storage: Storage) -> None:
    storage = sqlite_storage
    sid, folder = flat_snapshot(storage)
    assert organize(storage, sid).errors == []

    step = to_cas(storage, sid)

    assert step.errors == [] and step.to_version == "cas" and step.files_ingested == len(FLAT)
    assert os.readlink(folder) == f"by_timestamp/{TS}"
    with storage.session() as session:
        rows = {(r[2], r[3]): r[4] for r in snapshot_file_rows(session, sid)}
    expected = {}
    for src, dst in ORGANIZED.items():
        top, _, rest = dst.partition("/")
        expected[("index", top) if not rest else (top, rest)] = sha(FLAT[src])
    assert rows == expected
    assert (folder / "dom" / "output.html").read_bytes() == FLAT["output.html"]  # through the link
    assert (folder / "index" / "index.json").read_bytes() == FLAT["index.json"]
    assert verify_storage(storage).problems == 0
    # The emptied folder was moved aside in one piece, for gc to delete after the grace.
    [moved] = storage.layout.migrated.glob(f"*/{TS}")
    assert sorted(tree_hashes(moved).values()) == sorted(sha(data) for data in FLAT.values())
    assert to_cas(storage, sid).to_version == "cas"  # idempotent


def test_to_cas_keeps_the_folder_when_a_file_cannot_be_stored(sqlite_storage: Storage) -> None:
    sid, folder = flat_snapshot(sqlite_storage)
    odd = os.fsdecode(b"odd-\xff-name.txt")
    (folder / odd).write_bytes(b"not utf-8 named")
    before = tree_hashes(folder)

    step = migrate_snapshot(sqlite_storage, sid)

    assert step.to_version == "0.4" and step.steps == ["organize", "to_cas"]
    assert any("not valid UTF-8" in error for error in step.errors)
    assert folder.is_dir() and not folder.is_symlink()
    assert tree_hashes(folder) == before  # flat and untouched
    # Organized on its own, it still cannot go further: the odd file stays, reported.
    assert organize(sqlite_storage, sid).to_version == "organized"
    step = to_cas(sqlite_storage, sid)
    assert step.to_version == "organized" and any("not valid UTF-8" in e for e in step.errors)
    assert sorted(tree_hashes(folder).values()) == sorted(before.values())  # all bytes still here


def test_migrate_batch_takes_a_generated_collection_into_the_store(storage: Storage) -> None:
    manifest = generate_collection(storage.settings.data_dir, 25, versions=ALL_RELEASES, seed=21)
    import_orphans(storage)
    ids = [s.id for s in snapshots(storage).values()]

    report = migrate_batch(storage, ids)

    assert (report.processed, report.migrated, report.failed) == (25, 25, 0), report.errors
    assert {s.fs_version for s in snapshots(storage).values()} == {"cas"}
    assert all(p.is_symlink() for p in storage.layout.archive.iterdir() if p.name[0].isdigit())
    assert lost_bytes(storage, manifest) == []
    assert verify_storage(storage).problems == 0
    again = migrate_batch(storage, ids)
    assert (again.migrated, again.failed) == (0, 0)


def test_an_ingest_that_fails_reports_every_snapshot_and_moves_nothing(
        sqlite_storage: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
    generate_collection(sqlite_storage.settings.data_dir, 6, versions=ALL_RELEASES, seed=5)
    import_orphans(sqlite_storage)
    before = tree_hashes(sqlite_storage.layout.archive)
    real = cas_module.ingest_files

    def fail_midway(storage: Storage, items: Iterator[IngestItem], **kwargs: object) -> object:
        taken = [next(iter(items)) for _ in range(3)]  # the folders are listed lazily
        assert taken
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(cas_module, "ingest_files", fail_midway)

    report = migrate_batch(sqlite_storage, [s.id for s in snapshots(sqlite_storage).values()])

    assert (report.processed, report.migrated, report.failed) == (6, 0, 6)
    assert all("No space left on device" in error for error in report.errors)
    assert {s.fs_version for s in snapshots(sqlite_storage).values()} != {"cas"}
    assert tree_hashes(sqlite_storage.layout.archive) == before
    monkeypatch.setattr(cas_module, "ingest_files", real)
    again = migrate_batch(sqlite_storage, [s.id for s in snapshots(sqlite_storage).values()])
    assert (again.migrated, again.failed) == (6, 0), again.errors


def test_busy_missing_and_special_snapshots(sqlite_storage: Storage) -> None:
    storage = sqlite_storage
    sid, folder = flat_snapshot(storage)
    repo = CatalogRepository(storage.engine)
    folderless = repo.add_snapshot(url=URL, timestamp="1600000001", fs_version="0.x").id
    missing = repo.add_snapshot(url=URL, timestamp="1600000002", fs_version="0.6").id
    write_tree(storage.layout.archive / "1600000003", {"dom/output.html": b"organized by legacy_cas"})
    old_label = repo.add_snapshot(url=URL, timestamp="1600000003", fs_version="0.4").id
    with storage.session() as session:  # a label older versions wrote; the catalog refuses it now
        session.execute(text("UPDATE snapshot SET fs_version = 'legacy' WHERE id = :id"), {"id": old_label})

    with folder_lock(folder) as problem:
        assert problem is None
        report = migrate_batch(storage, [sid, folderless, missing, old_label, "no-such-id"])

    by_id = {step.snapshot_id: step for step in report.snapshots}
    assert by_id[sid].skipped == "folder busy (another run is working on it)"
    assert by_id[folderless].skipped == "no folder" and by_id[folderless].to_version == "0.x"
    assert "missing" in by_id[missing].errors[0]
    assert by_id[old_label].to_version == "cas"
    assert (report.processed, report.migrated, report.skipped, report.failed) == (4, 1, 2, 2)
    assert migrate_snapshot(storage, sid).to_version == "cas"
    with pytest.raises(KeyError):
        migrate_snapshot(storage, "no-such-id")


def test_a_name_clash_in_a_flat_folder_goes_through_a_real_organize(sqlite_storage: Storage) -> None:
    files = {k: v for k, v in FLAT.items() if k != "dom"}
    sid, folder = flat_snapshot(sqlite_storage, {**files, "dom/output.html": FLAT["output.html"]})

    step = migrate_snapshot(sqlite_storage, sid)  # flat output.html and dom/output.html: one name

    assert (step.to_version, step.steps, step.errors) == ("cas", ["organize", "to_cas"], [])
    assert (folder / "dom" / "output.html").read_bytes() == FLAT["output.html"]


def test_organize_never_writes_through_a_symlinked_folder(sqlite_storage: Storage, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    sid, folder = flat_snapshot(sqlite_storage, {k: v for k, v in FLAT.items() if k != "dom"})
    (folder / "dom").symlink_to(outside, target_is_directory=True)  # hostile: dom -> elsewhere

    for step in (migrate_snapshot(sqlite_storage, sid), organize(sqlite_storage, sid)):
        assert step.to_version == "0.4" and step.errors

    assert list(outside.iterdir()) == []
    assert (folder / "output.html").read_bytes() == FLAT["output.html"]


INDEX_FOLDER = {  # wget saved a path `index/`: its files must not take the top-level names
    "index/index.html": b"<html>wget's index/ page</html>",
    "index/index.json": b'{"wget": "index/index.json"}',
    "index/style.css": b"body {}",
}


def test_a_top_level_index_folder_never_takes_the_top_level_files_names(sqlite_storage: Storage) -> None:
    storage = sqlite_storage
    sid, folder = flat_snapshot(storage, {**FLAT, **INDEX_FOLDER})

    step = migrate_snapshot(storage, sid)

    assert (step.to_version, step.errors) == ("cas", [])
    with storage.session() as session:
        rows = {f"{r[2]}/{r[3]}": r[4] for r in snapshot_file_rows(session, sid)}
    assert rows["index/index.html"] == sha(FLAT["index.html"])
    assert rows["index/index.json"] == sha(FLAT["index.json"])
    for rel, data in INDEX_FOLDER.items():
        assert rows[f"unknown/{rel}"] == sha(data)
    assert len(rows) == len(FLAT) + len(INDEX_FOLDER)  # no file lost or overwritten
    assert (folder / "unknown" / "index" / "index.html").read_bytes() == INDEX_FOLDER["index/index.html"]


def test_organize_moves_a_top_level_index_folder_and_a_rerun_converges(sqlite_storage: Storage) -> None:
    storage = sqlite_storage
    sid, folder = flat_snapshot(storage, {**FLAT, **INDEX_FOLDER})
    # An earlier organize linked one file into place and died before removing anything.
    (folder / "unknown" / "index").mkdir(parents=True)
    os.link(folder / "index" / "index.html", folder / "unknown" / "index" / "index.html")

    step = organize(storage, sid)

    assert (step.to_version, step.errors) == ("organized", [])
    expected = {dst: sha(FLAT[src]) for src, dst in ORGANIZED.items()}
    expected |= {f"unknown/{rel}": sha(data) for rel, data in INDEX_FOLDER.items()}
    assert tree_hashes(folder) == expected
    assert organize(storage, sid).files_moved == 0  # organized: classifies to itself
    assert to_cas(storage, sid).to_version == "cas"
    with storage.session() as session:
        rows = {f"{r[2]}/{r[3]}": r[4] for r in snapshot_file_rows(session, sid)}
    assert rows == {(dst if "/" in dst else f"index/{dst}"): digest for dst, digest in expected.items()}
