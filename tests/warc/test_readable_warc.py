"""On an S3 primary an import reads the records from the file it was given (the bytes it
stored): a file that changes while it is read stops the import before the batch read from the
changed bytes is committed, with an error that says so; the batches before it stay, each
naming records of the stored (unchanged) copy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import func, select

from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.catalog.models import PageFetch
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.warc import importer
from archive_pipelines.warc.import_run import run_import
from archive_pipelines.warc.importer import ImportTarget
from archive_pipelines.warc.readable_warc import SourceChanged
from tests.helpers.import_crashes import write_crash_warc
from tests.helpers.s3_primary import s3_primary_data_dir


def test_a_file_changed_mid_import_stops_it_before_the_changed_batch(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importer, "BATCH_RECORDS", 10)
    warc = tmp_path / "given.warc.gz"
    write_crash_warc(warc)
    settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=s3_endpoint_url,
                                   bucket=s3_bucket)
    read = 0

    def on_record(count: int) -> None:
        nonlocal read
        read += count
        if read == 25:  # someone writes to the file while it is imported
            stat = warc.stat()
            os.utime(warc, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))

    with open_storage(settings) as parts:
        target = ImportTarget(parts.catalog, CapturePrimary(
            parts.primary.store, parts.primary.store_id, parts.views.farm, parts.views.crawl),
            settings.data_dir, settings=settings)
        with pytest.raises(SourceChanged, match=f"{warc} changed while it was imported"):
            run_import([warc], target=target, on_record=on_record)
        with parts.catalog.reading() as tx:
            captures = tx.session.scalar(select(func.count()).select_from(PageFetch))
    parts.catalog.engine.dispose()
    assert captures is not None and 0 < captures <= 20  # the batches read before the change
