import os
from pathlib import Path

import pytest
from sqlalchemy import select

from archive_pipelines.catalog.models import Blob, BlobCopy, SnapshotFile
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings, StorageSettings
from archive_pipelines.storage.assembly import StorageParts, open_storage
from archive_pipelines.storage.file_ingest import (
    ingest_directory,
    ingest_file,
    ingest_files,
    walk_directory,
)
from archive_pipelines.storage.file_work import FileWork
from archive_pipelines.storage.removal import delete_snapshot, remove_file
from archive_pipelines.storage.verify import verify_storage
from tests.helpers.storage import add_snapshot, sha, store_bytes, write_tree

JQUERY = b"/* jquery */" + b"j" * 30_000
CSS = b"body{}" * 2_000


def ref_counts(storage: StorageParts) -> dict[str, int]:
    with storage.catalog.transaction() as tx:
        return dict(tx.session.execute(select(Blob.sha256, Blob.ref_count)).all())


def test_cross_snapshot_dedup_stores_unique_bytes_once(storage: StorageParts, tmp_path: Path) -> None:
    unique_total = len(JQUERY) + len(CSS)
    for i in range(3):
        sid = add_snapshot(storage, url=f"https://site{i}.test/", timestamp=f"17000000{i}.0")
        html = f"<html>page {i}</html>".encode()
        unique_total += len(html)
        src = write_tree(tmp_path / f"s{i}", {"index.html": html, "static/jquery.js": JQUERY,
                                              "static/site.css": CSS})
        report = ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                                  snapshot_id=sid, extractor="wget", directory=src)
        assert report.files == 3 and not report.errors
        # One link per file in by_timestamp, one folder link per other view.
        assert report.links_created == 3 + 3
    assert store_bytes(storage) == unique_total
    counts = ref_counts(storage)
    assert counts[sha(JQUERY)] == 3 and counts[sha(CSS)] == 3
    with storage.catalog.transaction() as tx:
        copies = tx.session.execute(select(BlobCopy.status)).scalars().all()
    assert copies and set(copies) == {"present"}  # new blobs enter present on the primary
    assert report.new_blobs == 1 and report.deduplicated == 2
    assert report.bytes_saved == len(JQUERY) + len(CSS)


def test_links_open_the_stored_bytes(storage: StorageParts, tmp_path: Path) -> None:
    sid = add_snapshot(storage)
    src = write_tree(tmp_path / "s", {"a/b/index.html": b"hello"})
    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work, snapshot_id=sid,
                     extractor="wget", directory=src)
    archive = storage.layout.archive
    link = archive / "by_timestamp" / "1735142400.1" / "wget" / "a" / "b" / "index.html"
    assert link.is_symlink() and not os.path.isabs(os.readlink(link))
    assert link.read_bytes() == b"hello"
    by_domain = list((archive / "by_domain" / "example.com" / "20241225").iterdir())
    assert [p.name for p in by_domain] == [sid]
    # The other views show the snapshot through one folder link into by_timestamp.
    assert os.readlink(by_domain[0]) == "../../../by_timestamp/1735142400.1"
    assert (by_domain[0] / "wget" / "a" / "b" / "index.html").read_bytes() == b"hello"
    assert (archive / "by_date" / "20241225" / "example.com" / sid / "wget" / "a" / "b" /
            "index.html").read_bytes() == b"hello"
    assert (archive / "by_user" / "squash" / "20241225" / "example.com" / sid / "wget" / "a" /
            "b" / "index.html").read_bytes() == b"hello"


def test_ref_counts_are_exact_under_reingest_replace_and_delete(storage: StorageParts,
                                                                tmp_path: Path) -> None:
    a, b = add_snapshot(storage, timestamp="1.0"), add_snapshot(storage, timestamp="2.0")
    src = write_tree(tmp_path / "src", {"x": b"one", "y": b"one"})
    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work, snapshot_id=a,
                     extractor="wget", directory=src)
    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                     snapshot_id=a, extractor="wget", directory=src)  # re-ingest: no-op
    again = ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                             snapshot_id=a, extractor="wget", directory=src)
    assert again.unchanged == 2 and again.added == 0
    assert ref_counts(storage) == {sha(b"one"): 2}

    ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work, snapshot_id=b,
                     extractor="wget", directory=src)
    assert ref_counts(storage) == {sha(b"one"): 4}

    (src / "x").write_bytes(b"two")  # replacing a file moves the reference
    replaced = ingest_file(storage.catalog, storage.primary, storage.views, work=storage.work,
                           snapshot_id=a, extractor="wget", relative_path="x", source=src / "x")
    assert replaced.replaced == 1
    assert ref_counts(storage) == {sha(b"one"): 3, sha(b"two"): 1}
    link = storage.layout.archive / "by_timestamp" / "1.0" / "wget" / "x"
    assert link.read_bytes() == b"two"

    removed = remove_file(storage.catalog, storage.views, a,
                          relative_path="wget/x")  # deleting a file releases it
    assert removed.files == 1 and removed.links_removed == 1  # "y" keeps the folder
    assert ref_counts(storage) == {sha(b"one"): 3, sha(b"two"): 0}
    assert not link.is_symlink()

    b_folder = storage.layout.archive / "by_domain" / "example.com" / "20241225" / b
    assert b_folder.is_symlink()
    gone = delete_snapshot(storage.catalog, storage.views, b)
    assert gone.links_removed == 2 + 3  # its two file links, then its three folder links
    assert not b_folder.is_symlink()
    assert ref_counts(storage) == {sha(b"one"): 1, sha(b"two"): 0}
    with storage.catalog.transaction() as tx:
        unreferenced = tx.session.scalars(select(Blob.unreferenced_since)
                                       .where(Blob.sha256 == sha(b"two"))).one()
        assert unreferenced is not None
        assert tx.session.scalar(select(SnapshotFile.relative_path)) == "wget/y"


def test_batches_do_not_change_the_result(storage: StorageParts, tmp_path: Path) -> None:
    sid = add_snapshot(storage)
    files = {f"f{i:03d}.txt": f"content {i % 7}".encode() for i in range(120)}
    src = write_tree(tmp_path / "src", files)
    report = ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                              snapshot_id=sid, extractor="wget", directory=src, batch_size=16)
    assert (report.files, report.new_blobs, report.deduplicated) == (120, 7, 113)
    assert sum(ref_counts(storage).values()) == 120


@pytest.mark.unit
def test_bad_names_and_special_files_are_reported_not_ingested(sqlite_storage: StorageParts,
                                                               tmp_path: Path) -> None:
    sid = add_snapshot(sqlite_storage)
    src = write_tree(tmp_path / "src", {"ok.txt": b"ok"})
    os.symlink("/etc/passwd", src / "link")
    os.mkfifo(src / "fifo")
    odd = os.fsencode(src) + b"/bad\xff.txt"
    with open(odd, "wb") as handle:
        handle.write(b"odd")
    report = ingest_directory(sqlite_storage.catalog, sqlite_storage.primary,
                              sqlite_storage.views, work=sqlite_storage.work,
                              snapshot_id=sid, extractor="wget", directory=src)
    assert report.files == 1
    assert len(report.errors) == 3
    assert os.path.exists(odd)  # left in place, not lost
    assert ref_counts(sqlite_storage) == {sha(b"ok"): 1}


@pytest.mark.unit
def test_unreadable_and_vanished_files_are_reported(sqlite_storage: StorageParts,
                                                    tmp_path: Path) -> None:
    from archive_pipelines.storage.file_ingest import IngestItem, ingest_files

    sid = add_snapshot(sqlite_storage)
    src = write_tree(tmp_path / "src", {"ok": b"ok"})
    report = ingest_files(sqlite_storage.catalog, sqlite_storage.primary,
                          sqlite_storage.views, work=sqlite_storage.work, items=[
        IngestItem(sid, "wget", "ok", src / "ok"),
        IngestItem(sid, "wget", "gone", src / "gone"),
        IngestItem(sid, "wget", "../escape", src / "ok"),
    ])
    assert report.files == 1 and len(report.errors) == 2
    assert any("leaves its folder" in e for e in report.errors)


@pytest.mark.parametrize("hardlink", [False, True])
def test_a_multi_batch_ingest_in_worker_processes_matches_the_threaded_one(
        data_dir: Path, tmp_path: Path, hardlink: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """From its second batch an ingest stores and links in worker processes: same catalog,
    same links, same bytes as an ingest on threads, and verify finds nothing wrong."""
    files = {f"site/page{i}.html": f"<html>{i % 7}</html>".encode() for i in range(40)}
    files |= {f"static/{i}.js": JQUERY + bytes([i % 5]) for i in range(12)}
    pools: list[int] = []
    real_file_workers = FileWork.file_workers

    def counted(self: FileWork) -> object:
        pools.append(self.ingest_processes)
        return real_file_workers(self)
    monkeypatch.setattr(FileWork, "file_workers", counted)
    outcomes = {}
    for processes in (0, 2):
        settings = Settings(data_dir=data_dir / f"p{processes}",
                            storage=StorageSettings(ingest_processes=processes,
                                                    ingest_batch_size=7))
        initialize(settings)
        storage = open_storage(settings)
        try:
            sid = add_snapshot(storage)
            src = write_tree(tmp_path / f"src{processes}", files)
            report = ingest_files(storage.catalog, storage.primary, storage.views, work=storage.work,
                                  items=walk_directory(sid, "wget", src),
                                  hardlink=hardlink, batch_size=7)
            assert not report.errors
            assert (report.files, report.new_blobs, report.links_created) == (52, 12, 52 + 3)
            assert verify_storage(storage.catalog, storage.primary, storage.views).problems == 0
            archive = storage.layout.archive
            links = sorted(str(p.relative_to(archive)) for p in archive.rglob("*")
                           if p.is_symlink() and p.is_file())
            assert all((archive / link).read_bytes() == files[link.split("/wget/", 1)[1]]
                       for link in links)
            outcomes[processes] = (ref_counts(storage), [x.replace(sid, "SID") for x in links])
        finally:
            storage.catalog.engine.dispose()
    assert pools == [2]  # only the second ingest used worker processes
    assert outcomes[0] == outcomes[2]


@pytest.mark.unit
@pytest.mark.parametrize("name", [
    "dom/output.html", "x.tar.gz", "js/jquery.min.js", "README", ".htaccess", "a.b/c",
    "media/v.MP4", "a:b.html", "screenshot.png", "x.", "warc/a.warc.gz", "archive.org.txt",
    "wget/www.example.com/path/index.html", "a/b.c/d.json", "font.woff2", "x.tar.bz2"])
def test_guess_mime_matches_mimetypes_on_the_whole_name(name: str) -> None:
    import mimetypes

    from archive_pipelines.storage.file_ingest import guess_mime
    expected = mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"
    assert guess_mime(name) == expected


@pytest.mark.unit
def test_a_rerun_after_a_crash_before_the_aliases_makes_them(sqlite_storage: StorageParts,
                                                             tmp_path: Path) -> None:
    """Killed after its commit, before aliases and links: the blobs are stored and recorded,
    so the rerun sees nothing new to alias; its links must not dangle."""
    storage = sqlite_storage
    sid = add_snapshot(storage)
    files = {"index.html": b"<html>page</html>", "a/app.js": b"js()", "a/b.css": b"css"}
    src = write_tree(tmp_path / "src", files)
    assert ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                            snapshot_id=sid, extractor="wget", directory=src).errors == []
    folder = storage.layout.archive / "by_timestamp" / "1735142400.1" / "wget"
    for rel, data in files.items():  # undo what came after the commit
        (folder / rel).unlink()
        assert storage.views.farm.aliases.remove(sha(data))  # the plain one, and .html ...

    again = ingest_directory(storage.catalog, storage.primary, storage.views, work=storage.work,
                             snapshot_id=sid, extractor="wget", directory=src)

    assert again.errors == [] and again.unchanged == len(files)
    for rel, data in files.items():
        assert (folder / rel).read_bytes() == data
    assert verify_storage(storage.catalog, storage.primary, storage.views).problems == 0
