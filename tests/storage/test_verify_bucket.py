"""`verify` of an S3 primary (moto_server): one listing instead of a request per blob, the
listed size checked, a blob listed missing looked up again, --deep reading every blob."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest

from archive_pipelines.blobstore.s3 import S3BlobStore, StoredObject
from archive_pipelines.storage.assembly import StorageParts, open_storage
from archive_pipelines.storage.file_ingest import IngestItem, ingest_files
from archive_pipelines.storage.verify import verify_storage
from archive_pipelines.storage.verify_bucket import ListingOutOfOrder, _merge
from tests.helpers.s3_primary import s3_primary_data_dir
from tests.helpers.storage import add_snapshot, sha, write_tree

BLOBS = 25


@pytest.fixture
def s3_storage(tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> Iterator[StorageParts]:
    settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=s3_endpoint_url,
                                   bucket=s3_bucket)
    parts = open_storage(settings)
    try:
        yield parts
    finally:
        parts.close()
        parts.catalog.engine.dispose()


def _ingest(storage: StorageParts, tmp_path: Path) -> list[str]:
    files = {f"{i}.html": f"<p>{i}</p>".encode() * (i + 1) for i in range(BLOBS)}
    site = write_tree(tmp_path / "site", files)
    snapshot = add_snapshot(storage)
    done = ingest_files(storage.catalog, storage.primary, storage.views, work=storage.work,
                        items=[IngestItem(snapshot, "wget", f"wget/{name}", site / name)
                               for name in files])
    assert not done.errors and done.new_blobs == BLOBS
    return sorted(sha(body) for body in files.values())


def _store(storage: StorageParts) -> S3BlobStore:
    store = storage.primary.store
    assert isinstance(store, S3BlobStore)
    return store


def test_a_shallow_verify_is_one_listing_and_a_deep_one_a_get_per_blob(
        s3_storage: StorageParts, tmp_path: Path) -> None:
    _ingest(s3_storage, tmp_path)
    store = _store(s3_storage)
    store.take_request_counts()
    shallow = verify_storage(s3_storage.catalog, s3_storage.primary, s3_storage.views)
    assert shallow.problems == 0 and shallow.blobs_checked == BLOBS
    assert store.take_request_counts() == {"ListObjectsV2": 1}
    deep = verify_storage(s3_storage.catalog, s3_storage.primary, s3_storage.views, deep=True)
    assert deep.problems == 0 and deep.blobs_checked == BLOBS
    assert store.take_request_counts() == {"ListObjectsV2": 1, "GetObject": BLOBS}
    assert not shallow.views_checked and "no symlink views" in shallow.log_lines()[0]


def test_a_truncated_object_is_corrupt_and_a_lost_one_missing_without_deep(
        s3_storage: StorageParts, tmp_path: Path, s3_endpoint_url: str, s3_bucket: str) -> None:
    hashes = _ingest(s3_storage, tmp_path)
    store = _store(s3_storage)
    client = boto3.client("s3", endpoint_url=s3_endpoint_url, region_name="us-east-1")
    short, lost = hashes[4], hashes[9]
    client.put_object(Bucket=s3_bucket, Key=store.object_key(short), Body=b"<p>")
    client.delete_object(Bucket=s3_bucket, Key=store.object_key(lost))
    store.take_request_counts()
    report = verify_storage(s3_storage.catalog, s3_storage.primary, s3_storage.views)
    assert report.examples["corrupt_blob_files"] == [short]
    assert report.examples["missing_blob_files"] == [lost]
    assert report.problems == 2 and report.blobs_checked == BLOBS
    # One listing, and one look at the blob it did not list (it might be new since).
    assert store.take_request_counts() == {"ListObjectsV2": 1, "HeadObject": 1}


def _listed(*names: str) -> Iterator[StoredObject]:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return iter([StoredObject(f"k/{name}", name, 1, at) for name in names])


@pytest.mark.unit
def test_the_merge_pairs_the_listing_with_the_catalog_in_hash_order() -> None:
    a, b, c, d = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)
    merged = list(_merge(_listed(a, c, d), iter([b, c])))
    assert merged == [(a, 1, False), (b, None, True), (c, 1, True), (d, 1, False)]
    with pytest.raises(ListingOutOfOrder):
        list(_merge(_listed(c, a), iter([])))


def test_a_blob_stored_after_the_listing_passed_its_key_is_not_missing(
        s3_storage: StorageParts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hashes = _ingest(s3_storage, tmp_path)
    store = _store(s3_storage)
    late = hashes[7]
    real = store.iter_objects

    def listing_before_the_upload(prefix: str = "") -> Iterator[StoredObject]:
        return (stored for stored in real(prefix) if stored.name != late)

    monkeypatch.setattr(store, "iter_objects", listing_before_the_upload)
    store.take_request_counts()
    report = verify_storage(s3_storage.catalog, s3_storage.primary, s3_storage.views)
    assert report.problems == 0 and report.blobs_checked == BLOBS, report.examples
    assert store.take_request_counts() == {"ListObjectsV2": 1, "HeadObject": 1}
