"""The S3 endpoint failing in the middle of a WARC import: the import stops with the store's
error (no batch whose bodies did not all reach the bucket is committed), every blob the
catalog records in the primary is in the bucket, and a rerun once the endpoint is back
converges on the catalog a clean import makes.

Real endpoints only: moto_server behind a proxy that answers every request with 503 on demand.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.blobstore import BlobStoreError, S3BlobStore
from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.warc import importer
from archive_pipelines.warc.import_run import run_import
from archive_pipelines.warc.importer import ImportReport, ImportTarget
from archive_testkit.servers.faulty_http import FaultyProxy
from tests.helpers.import_crashes import import_state, write_crash_warc
from tests.helpers.s3_primary import s3_primary_data_dir


@pytest.fixture
def proxy(s3_endpoint_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultyProxy]:
    monkeypatch.setenv("ARCHIVE_S3_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("ARCHIVE_S3_READ_TIMEOUT", "2")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    with FaultyProxy(s3_endpoint_url) as running:
        yield running


def _import(settings: Settings, warc: Path, *, after_record: int | None = None,
            proxy: FaultyProxy | None = None) -> ImportReport:
    read = 0

    def on_record(count: int) -> None:
        nonlocal read
        read += count
        if read == after_record and proxy is not None:
            proxy.fail(503, "ServiceUnavailable")  # the endpoint goes away

    with open_storage(settings) as parts:
        target = ImportTarget(parts.catalog, CapturePrimary(
            parts.primary.store, parts.primary.store_id, parts.views.farm, parts.views.crawl),
            settings.data_dir, settings=settings)
        try:
            return run_import([warc], target=target, on_record=on_record)
        finally:
            parts.catalog.engine.dispose()


def _primary_blobs(data_dir: Path) -> set[str]:
    rows = import_state(data_dir)["blob_copy"]
    return {dict(row)["blob_id"] for row in rows if dict(row)["store_id"] == "primary"}


def test_an_outage_mid_import_commits_nothing_missing_and_a_rerun_converges(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str, proxy: FaultyProxy,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importer, "BATCH_RECORDS", 10)  # batches commit before the outage
    warc = tmp_path / "crash.warc.gz"
    write_crash_warc(warc)
    settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=proxy.url, bucket=s3_bucket,
                                   prefix="cut")
    with pytest.raises(BlobStoreError, match="primary"):
        _import(settings, warc, after_record=35, proxy=proxy)
    proxy.heal()
    bucket = S3BlobStore(bucket=s3_bucket, prefix="cut", name="direct", codec="raw",
                         endpoint_url=s3_endpoint_url)
    recorded = _primary_blobs(settings.data_dir)
    assert recorded, "batches were committed before the outage"
    assert [sha for sha in recorded if not bucket.exists(sha)] == []

    rerun = _import(settings, warc)
    assert not rerun.failed and rerun.unresolved_revisits == 0, rerun.problems
    clean = s3_primary_data_dir(tmp_path / "clean", endpoint_url=s3_endpoint_url,
                                bucket=s3_bucket, prefix="clean")
    assert not _import(clean, warc).failed
    assert import_state(settings.data_dir) == import_state(clean.data_dir)
    assert all(bucket.exists(sha) for sha in _primary_blobs(settings.data_dir))
