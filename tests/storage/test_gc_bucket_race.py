"""gc on an S3 primary against another machine that references a blob while gc collects it.

Two data dirs (two machines) share one catalog on PostgreSQL and one bucket. Machine A runs
gc; machine B ingests the same bytes at the worst moment: after gc's claim, while the object
is still at its key, so B finds it there (HEAD), uploads nothing and records the reference.
Only gc's second look at the ref count (it puts the object back from its trash) keeps the
bytes. A writer that records a blob present without uploading it *after* gc's second look
is caught by the next run's walk of the trash, which puts the object back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from sqlalchemy import select

from archive_pipelines.catalog import CatalogTransaction
from archive_pipelines.catalog.file_repository import FileEntry
from archive_pipelines.catalog.models import Blob, BlobCopy
from archive_pipelines.storage.assembly import StorageParts, open_storage
from archive_pipelines.storage.file_ingest import IngestReport, ingest_file
from archive_pipelines.storage.gc import collect_garbage
from archive_pipelines.storage.gc_bucket import TRASH_FOLDER
from archive_pipelines.storage.removal import remove_file
from archive_pipelines.storage.verify import verify_storage
from tests.helpers.s3_primary import s3_primary_data_dir
from tests.helpers.storage import add_snapshot, sha, write_tree

DATA = b"<html>a page gc is collecting while another machine finds it again</html>"


@pytest.fixture
def machines(tmp_path: Path, s3_endpoint_url: str, s3_bucket: str, postgres_url: str
             ) -> Iterator[tuple[StorageParts, StorageParts]]:
    """Machines A and B: a data dir each, one catalog (PostgreSQL), one bucket."""
    parts = []
    for name in ("a", "b"):
        settings = s3_primary_data_dir(tmp_path / name, endpoint_url=s3_endpoint_url,
                                       bucket=s3_bucket, catalog_url=postgres_url)
        parts.append(open_storage(settings))
    try:
        yield parts[0], parts[1]
    finally:
        for part in parts:
            part.close()
            part.catalog.engine.dispose()


def _garbage(a: StorageParts, tmp_path: Path) -> str:
    """A blob A stored and stopped referencing: gc's to collect with a grace of 0."""
    old = add_snapshot(a, url="https://example.com/old", timestamp="1.0")
    done = ingest_file(a.catalog, a.primary, a.views, work=a.work, snapshot_id=old,
                       extractor="wget", relative_path="page.html",
                       source=write_tree(tmp_path / "old", {"page.html": DATA}) / "page.html")
    assert not done.errors and done.new_blobs == 1
    remove_file(a.catalog, a.views, old, relative_path="wget/page.html")
    return sha(DATA)


def _keys(bucket: str, endpoint: str) -> list[str]:
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    return sorted(o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", []))


def _status(tx: CatalogTransaction, digest: str) -> str | None:
    return tx.session.scalar(select(BlobCopy.status).join(Blob, Blob.id == BlobCopy.blob_id)
                             .where(Blob.sha256 == digest))


def test_an_ingest_on_another_machine_between_claim_and_recheck_keeps_the_blob(
        machines: tuple[StorageParts, StorageParts], tmp_path: Path,
        s3_endpoint_url: str, s3_bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = machines
    digest = _garbage(a, tmp_path)
    key = f"archive/sha256/{digest[:2]}/{digest[2:4]}/{digest}"
    new = add_snapshot(b, url="https://example.com/new", timestamp="2.0")
    source = write_tree(tmp_path / "new", {"page.html": DATA}) / "page.html"
    ingests: list[IngestReport] = []
    store = a.primary.store
    real_set_aside = store.set_aside

    def ingest_then_set_aside(sha256: str, suffix: str, **kwargs: Any) -> str | None:
        with b.catalog.reading() as tx:  # A has claimed it...
            assert _status(tx, sha256) == "missing"
        # ...and B stores the same bytes: it finds the object at its key and commits.
        ingests.append(ingest_file(b.catalog, b.primary, b.views, work=b.work,
                                   snapshot_id=new, extractor="wget",
                                   relative_path="page.html", source=source))
        b_requests = b.primary.store.request_counts()  # type: ignore[attr-defined]
        assert b_requests.get("PutObject", 0) == 0, "B uploaded: not the race under test"
        return real_set_aside(sha256, suffix, **kwargs)

    monkeypatch.setattr(store, "set_aside", ingest_then_set_aside)
    report = collect_garbage(a.catalog, a.primary, a.views.farm, layout=a.layout,
                             grace_hours=0)
    monkeypatch.undo()

    assert len(ingests) == 1 and not ingests[0].errors and ingests[0].added == 1
    assert (report.candidates, report.revived, report.removed) == (1, 1, 0)
    assert _keys(s3_bucket, s3_endpoint_url) == [key]  # back at its key, the trash empty
    with a.catalog.reading() as tx:
        assert _status(tx, digest) == "present"
    assert store.open(digest).read() == DATA
    checked = verify_storage(a.catalog, a.primary, a.views, deep=True)
    assert checked.problems == 0 and checked.blobs_checked == 1, checked.examples


def test_a_blob_recorded_present_after_gc_is_put_back_from_the_trash(
        machines: tuple[StorageParts, StorageParts], tmp_path: Path,
        s3_endpoint_url: str, s3_bucket: str) -> None:
    a, b = machines
    digest = _garbage(a, tmp_path)
    key = f"archive/sha256/{digest[:2]}/{digest[2:4]}/{digest}"
    first = collect_garbage(a.catalog, a.primary, a.views.farm, layout=a.layout, grace_hours=0)
    assert (first.removed, first.trash.count) == (1, 0)
    assert _keys(s3_bucket, s3_endpoint_url) == [f"archive/{TRASH_FOLDER}/{digest}"]

    # B found the object before gc moved it and records it now, uploading nothing (a writer
    # that trusts what it saw, as a crawl's body does): the catalog says present, the bytes
    # are in the trash.
    new = add_snapshot(b, url="https://example.com/new", timestamp="2.0")
    with b.catalog.transaction() as tx:
        tx.files.apply_files([FileEntry(new, "wget", "wget/page.html", digest, len(DATA),
                                         "text/html")], primary_store_id=b.primary.store_id)
    assert verify_storage(b.catalog, b.primary, b.views).found["missing_blob_files"] == 1

    second = collect_garbage(a.catalog, a.primary, a.views.farm, layout=a.layout,
                             grace_hours=0)
    assert (second.trash_restored, second.trash.count, second.removed) == (1, 0, 0)
    assert _keys(s3_bucket, s3_endpoint_url) == [key]
    checked = verify_storage(b.catalog, b.primary, b.views, deep=True)
    assert checked.problems == 0 and checked.blobs_checked == 1, checked.examples


def test_the_trash_is_emptied_only_after_the_grace_and_a_dry_run_changes_nothing(
        machines: tuple[StorageParts, StorageParts], tmp_path: Path,
        s3_endpoint_url: str, s3_bucket: str) -> None:
    a, _b = machines
    digest = _garbage(a, tmp_path)
    key = f"archive/sha256/{digest[:2]}/{digest[2:4]}/{digest}"
    trash = f"archive/{TRASH_FOLDER}/{digest}"
    dry = collect_garbage(a.catalog, a.primary, a.views.farm, layout=a.layout, grace_hours=0,
                          dry_run=True)
    assert (dry.candidates, dry.removed, dry.blobs.bytes) == (1, 1, len(DATA))
    assert _keys(s3_bucket, s3_endpoint_url) == [key]
    collect_garbage(a.catalog, a.primary, a.views.farm, layout=a.layout, grace_hours=0)
    assert _keys(s3_bucket, s3_endpoint_url) == [trash]
    kept = collect_garbage(a.catalog, a.primary, a.views.farm, layout=a.layout,
                           grace_hours=1)  # in the trash for less than an hour
    assert (kept.trash_waiting, kept.trash.count) == (1, 0)
    dry = collect_garbage(a.catalog, a.primary, a.views.farm, layout=a.layout, grace_hours=0,
                          dry_run=True)
    assert (dry.trash.count, dry.total_bytes_freed) == (1, len(DATA))
    assert _keys(s3_bucket, s3_endpoint_url) == [trash]
    emptied = collect_garbage(a.catalog, a.primary, a.views.farm, layout=a.layout,
                              grace_hours=0)
    assert (emptied.trash.count, emptied.total_bytes_freed) == (1, len(DATA))
    assert _keys(s3_bucket, s3_endpoint_url) == []


def test_a_blob_whose_object_is_already_gone_changes_only_the_catalog(
        machines: tuple[StorageParts, StorageParts], tmp_path: Path,
        s3_endpoint_url: str, s3_bucket: str) -> None:
    a, _b = machines
    digest = _garbage(a, tmp_path)
    boto3.client("s3", endpoint_url=s3_endpoint_url, region_name="us-east-1").delete_object(
        Bucket=s3_bucket, Key=f"archive/sha256/{digest[:2]}/{digest[2:4]}/{digest}")
    report = collect_garbage(a.catalog, a.primary, a.views.farm, layout=a.layout,
                             grace_hours=0)
    assert (report.candidates, report.already_gone, report.removed) == (1, 1, 0)
    assert _keys(s3_bucket, s3_endpoint_url) == []
    with a.catalog.reading() as tx:
        assert _status(tx, digest) == "missing"


def test_a_body_named_by_a_segment_another_machine_left_in_the_bucket_is_kept(
        machines: tuple[StorageParts, StorageParts], tmp_path: Path) -> None:
    """B crawled: its segment (not yet ingested) waits in the bucket and names a body the
    catalog holds unreferenced. A's gc reads the bucket's segments, not only its own disk."""
    a, b = machines
    digest = _garbage(a, tmp_path)
    segment = tmp_path / "segment.jsonl"
    segment.write_text('{"page_url": "https://example.com/new", "requests": [{"response": '
                       f'{{"body_hash": "sha256:{digest}"}}}}]}}\n')
    from archive_pipelines.captures.segment_source import segment_source

    relative = ("sessions/2026-11-28/3f2b8c1e-5a4d-4e6f-9a7b-1c2d3e4f5a6b/"
                "20261128T080000000000Z_000001.jsonl")
    source = segment_source(b.primary.store, b.layout.root)
    source.store_file(relative, segment)

    kept = collect_garbage(a.catalog, a.primary, a.views.farm, layout=a.layout, grace_hours=0)
    assert (kept.kept_for_crawl, kept.removed) == (1, 0)
    assert a.primary.store.exists(digest)
