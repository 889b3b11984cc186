"""A large WARC imported onto an S3 primary with worker processes asked for is read in the
calling process, its bodies put by threads (puts wait on the network: worker processes, each
putting one body at a time, were slower): the same catalog rows and objects in the bucket as
with one process asked for. The requests an import sends: the file's HEAD and PUT, then for
each body a HEAD and, when new, a PUT (the reading thread does not look first)."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.warc import import_spans
from archive_pipelines.warc.import_run import run_import
from archive_pipelines.warc.importer import ImportReport, ImportTarget
from tests.helpers.import_crashes import import_state, write_crash_warc
from tests.helpers.s3_primary import s3_primary_data_dir


def _import(settings: Settings, warc: Path) -> tuple[ImportReport, dict[str, int]]:
    with open_storage(settings) as parts:
        target = ImportTarget(parts.catalog, CapturePrimary(
            parts.primary.store, parts.primary.store_id, parts.views.farm, parts.views.crawl),
            settings.data_dir, settings=settings)
        report = run_import([warc], target=target)
        requests = parts.primary.store.request_counts()  # type: ignore[attr-defined]
    parts.catalog.engine.dispose()
    return report, requests


def _keys(endpoint_url: str, bucket: str, prefix: str) -> set[str]:
    client = boto3.client("s3", endpoint_url=endpoint_url, region_name="us-east-1")
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/")
    return {item["Key"].removeprefix(prefix + "/") for page in pages
            for item in page.get("Contents", [])}


def test_a_large_file_is_read_here_and_its_bodies_put_by_threads(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(import_spans, "SPAN_BYTES", 2048)
    monkeypatch.setattr(import_spans, "MIN_PARALLEL_BYTES", 0)
    warc = tmp_path / "crash.warc.gz"
    write_crash_warc(warc)
    done: dict[int, tuple[ImportReport, dict[str, int]]] = {}
    for processes in (1, 2):
        settings = s3_primary_data_dir(
            tmp_path / f"data-{processes}", endpoint_url=s3_endpoint_url, bucket=s3_bucket,
            prefix=f"p{processes}", extra=f"[import]\nprocesses = {processes}\n")
        done[processes] = _import(settings, warc)
    (serial, requests), (parallel, parallel_requests) = done[1], done[2]
    assert serial.new_bodies > 10 and serial.unresolved_revisits == 0 and not serial.failed
    assert parallel.counts() == serial.counts() and parallel.reread_spans == 0
    assert parallel.problems == serial.problems
    assert import_state(tmp_path / "data-2") == import_state(tmp_path / "data-1")
    assert _keys(s3_endpoint_url, s3_bucket, "p2") == _keys(s3_endpoint_url, s3_bucket, "p1")
    # The file and each distinct body (all new here): one HEAD and one PUT; the first HEAD's
    # bare 404 asks once whether the bucket is there.
    assert requests == {"HeadObject": 1 + serial.new_bodies, "PutObject": 1 + serial.new_bodies,
                        "HeadBucket": 1}
    assert parallel_requests == requests  # (worker processes' requests would not count here)
