"""`warc_inbox_sensor` and the `import_warc_job` it asks for, on a data dir whose primary is an
S3 bucket (moto_server): a WARC dropped in the (local) inbox is imported into the bucket, its
URLs found by `captures`, the file left where it lies."""

from __future__ import annotations

import hashlib
from pathlib import Path

import dagster as dg
import pytest

from archive_pipelines.assets.warc_import import import_warc_job
from archive_pipelines.blobstore import open_store
from archive_pipelines.captures.lookup import find_url
from archive_pipelines.catalog import Catalog
from archive_pipelines.resources import SettingsResource
from archive_pipelines.sensors.warc_inbox import warc_inbox_sensor
from archive_testkit.hostile_records import page, response_bytes, write_records
from tests.helpers.s3_primary import s3_primary_data_dir

PAGES = [page(index) for index in range(30, 33)]


def test_an_inbox_file_is_imported_into_the_bucket(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str,
        dagster_instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=s3_endpoint_url,
                                   bucket=s3_bucket,
                                   extra="[import]\ninbox_settle_seconds = 0.0\n")
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(settings.data_dir))
    warc = settings.data_dir / "inbox" / "site.warc.gz"
    warc.parent.mkdir()
    write_records(warc, [response_bytes(url, body, index=i).data
                         for i, (url, body) in enumerate(PAGES)])
    before = warc.stat()
    with dg.build_sensor_context(instance=dagster_instance, resources={
            "settings": SettingsResource(data_dir=str(settings.data_dir))}) as context:
        ticked = warc_inbox_sensor(context)
    assert isinstance(ticked, dg.SensorResult)
    [request] = ticked.run_requests or []

    from archive_pipelines.definitions import defs

    job = defs.resolve_job_def(import_warc_job.name)
    result = job.execute_in_process(instance=dagster_instance, run_config=request.run_config)
    assert result.success
    store = open_store(settings.primary_store, settings.data_dir)
    assert store.local_path(hashlib.sha256(warc.read_bytes()).hexdigest()) is None
    assert store.exists(hashlib.sha256(warc.read_bytes()).hexdigest())
    catalog = Catalog.open(settings.catalog_url)
    try:
        for url, body in PAGES:
            [capture] = find_url(catalog, url)[1]
            assert capture.body_sha256 == hashlib.sha256(body).hexdigest()
            assert store.exists(capture.body_sha256)
    finally:
        catalog.close()
    after = warc.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
