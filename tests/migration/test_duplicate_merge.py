"""Exact duplicates (same url+timestamp, or url+crawl_id) are merged into the oldest."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from archive_pipelines.catalog import Catalog
from archive_pipelines.catalog.models import Snapshot
from archive_pipelines.migration import import_orphans, merge_duplicates, migrate_batch
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.file_ingest import ingest_file
from archive_pipelines.storage.verify import verify_storage
from archive_testkit.archivebox import ReleaseMix, generate_collection
from tests.helpers.migration import lost_bytes, snapshots
from tests.helpers.storage import sha, write_tree

URL = "https://example.com/page"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def make(storage: StorageParts, ts: str, age: int, files: dict[str, bytes], tags: list[str],
         crawl_id: str | None = None, url: str = URL) -> str:
    repo = Catalog(storage.catalog.engine)
    sid = repo.snapshots.add_snapshot(url=url, timestamp=ts, created_at=T0 + timedelta(minutes=age),
                                      tags=tags,
                            crawl_id=crawl_id, title=f"title {age}" * (age + 1)).id
    src = write_tree(storage.settings.data_dir.parent / f"src-{sid}", files)
    for rel in files:
        extractor, _, path = rel.partition("/")
        assert not ingest_file(storage.catalog, storage.primary, storage.views, work=storage.work,
                               snapshot_id=sid, extractor=extractor, relative_path=path,
                               source=src / rel).errors
    repo.snapshots.add_result(sid, extractor="dom", output=f"run-{age}.html",
                              start_ts=T0 + timedelta(minutes=age))
    return sid


def snapshots_with(storage: StorageParts, timestamp: str) -> list[Snapshot]:
    with storage.catalog.transaction() as tx:
        return list(tx.session.scalars(select(Snapshot).where(Snapshot.timestamp == timestamp)))


def files_of(storage: StorageParts, sid: str) -> dict[str, str]:
    with storage.catalog.transaction() as tx:
        return {r[3]: r[4] for r in tx.files.snapshot_file_rows(sid)}


def test_url_timestamp_duplicates_merge_into_the_oldest(storage: StorageParts) -> None:
    keeper = make(storage, "1600000000", 0, {"dom/output.html": b"keeper dom", "pdf/output.pdf": b"pdf"},
                  ["a"])
    dup1 = make(storage, "1600000000", 5, {"dom/output.html": b"dup dom", "media/video.mp4": b"video"},
                ["b"])
    dup2 = make(storage, "1600000000", 9, {"warc/x.warc.gz": b"warc", "media/video.mp4": b"video"},
                ["a", "c"])
    other_time = make(storage, "1600000099", 1, {"dom/output.html": b"another capture"}, [])
    link = storage.layout.archive / "1600000000"
    os.symlink("by_timestamp/1600000000", link)

    report = merge_duplicates(storage.catalog, storage.primary, storage.views,
                              work=storage.work, layout=storage.layout,
                              batch_size=1)

    # dup1 holds other bytes than the keeper at dom/output.html: merging would drop them, so
    # both are kept and reported. dup2 agrees with the keeper wherever both have a file.
    assert (report.groups, report.merged, report.files_moved, report.skipped) == (1, 1, 2, 1)
    assert any(dup1 in error and "other bytes" in error for error in report.errors)
    left = {s.id: s for s in snapshots_with(storage, "1600000000")}
    assert set(left) == {keeper, dup1}
    assert files_of(storage, keeper) == {
        "dom/output.html": sha(b"keeper dom"),
        "pdf/output.pdf": sha(b"pdf"), "media/video.mp4": sha(b"video"), "warc/x.warc.gz": sha(b"warc")}
    assert files_of(storage, dup1) == {"dom/output.html": sha(b"dup dom"),
                                       "media/video.mp4": sha(b"video")}
    assert sorted(t.name for t in left[keeper].tags) == ["a", "c"]
    assert left[keeper].title == "title 9" * 10  # the longest title
    assert len(Catalog(storage.catalog.engine).snapshots.results_for(keeper)) == 2
    assert (storage.layout.archive / "by_timestamp/1600000000/media/video.mp4").read_bytes() == b"video"
    found = verify_storage(storage.catalog, storage.primary, storage.views).found
    assert found["refcount_drift"] == 0 and found["missing_links"] == 0 and found["orphan_links"] == 0
    assert os.readlink(link) == "by_timestamp/1600000000"
    assert dup2 not in left and other_time in {s.id for s in snapshots(storage).values()}
    assert merge_duplicates(storage.catalog, storage.primary, storage.views, work=storage.work,
                            layout=storage.layout).merged == 0  # dup1 stays reported, never dropped


def test_crawl_id_duplicates_merge_and_compatibility_links_follow(storage: StorageParts) -> None:
    keeper = make(storage, "1600000000", 0, {"dom/output.html": b"dom"}, [], crawl_id="crawl-1")
    dup = make(storage, "1600000050", 3, {"pdf/output.pdf": b"pdf"}, ["x"], crawl_id="crawl-1")
    make(storage, "1600000060", 4, {"pdf/output.pdf": b"pdf"}, [], crawl_id="crawl-1",
         url="https://example.com/other")  # same crawl, another url: not a duplicate
    os.symlink("by_timestamp/1600000050", storage.layout.archive / "1600000050")

    report = merge_duplicates(storage.catalog, storage.primary, storage.views, work=storage.work,
                              layout=storage.layout)

    assert (report.groups, report.merged, report.files_moved) == (1, 1, 1)
    assert dup not in {s.id for s in snapshots(storage).values()}
    assert files_of(storage, keeper) == {"dom/output.html": sha(b"dom"), "pdf/output.pdf": sha(b"pdf")}
    assert os.readlink(storage.layout.archive / "1600000050") == "by_timestamp/1600000000"
    assert (storage.layout.archive / "1600000050/pdf/output.pdf").read_bytes() == b"pdf"
    assert verify_storage(storage.catalog, storage.primary,
                          storage.views).found["refcount_drift"] == 0


def test_legacy_duplicate_folders_are_migrated_then_merged(sqlite_storage: StorageParts) -> None:
    storage = sqlite_storage
    manifest = generate_collection(storage.settings.data_dir, ReleaseMix(releases=("0.9",), duplicates=3),
                                   snapshots=12, seed=5)
    import_orphans(storage.catalog, storage.layout)
    assert len(snapshots(storage)) == 15

    report = merge_duplicates(storage.catalog, storage.primary, storage.views, work=storage.work,
                              layout=storage.layout)

    assert (report.groups, report.merged, report.skipped) == (3, 3, 0), report.errors
    assert len(snapshots(storage)) == 12
    assert lost_bytes(storage, manifest) == []
    rest = [s.id for s in snapshots(storage).values() if s.fs_version != "cas"]
    assert migrate_batch(storage.catalog, storage.primary, storage.views,
                         work=storage.work, layout=storage.layout, snapshot_ids=rest).failed == 0
    assert verify_storage(storage.catalog, storage.primary, storage.views).problems == 0
