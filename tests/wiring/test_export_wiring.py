"""`export_warc_job` from definitions.py on an ingested real crawl: a crawl-day partition
exports that day's captures into the data dir's exports folder (a WACZ when asked), with the
export's counts as metadata; a capture whose body is gone fails the run after the rest is
written."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.assets.warc_export import export_warc_job
from archive_pipelines.captures.segment_ingest import ingest_crawl
from archive_pipelines.catalog import CaptureScope
from tests.helpers.captures import capture_primary, open_parts


@pytest.fixture(autouse=True)
def _sqlite_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)


def test_a_day_partition_exports_that_days_captures(
        crawl_data: Path, dagster_instance: dg.DagsterInstance,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from archive_pipelines.definitions import defs

    with open_parts(crawl_data) as parts:
        assert not ingest_crawl(parts.catalog, capture_primary(parts), crawl_data).failed
        captures = parts.catalog.exports.page_in_scope(CaptureScope(), after_id=0, limit=100_000)
        parts.catalog.engine.dispose()
    answered = [c for c in captures if c.status_code is not None]
    day = Path(captures[0].index_path).parts[1]  # sessions/<day>/<session>/...
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(crawl_data))
    dagster_instance.add_dynamic_partitions("crawl_days", [day])
    job = defs.resolve_job_def(export_warc_job.name)
    result = job.execute_in_process(partition_key=day, instance=dagster_instance, run_config={
        "ops": {"export_warc_op": {"config": {"name": "day.warc.gz"}}}})
    assert result.success
    out = crawl_data / "exports" / "day.warc.gz"
    [materialized] = [event for event in result.all_node_events if event.is_successful_output]
    metadata = {key: value.value for key, value in
                materialized.event_specific_data.metadata.items()}  # type: ignore[union-attr]
    assert metadata["path"] == str(out)
    with open(out, "rb") as handle:
        written = sum(record.rec_type in ("response", "revisit")
                      for record in ArchiveIterator(handle))
    assert written == metadata["responses"] + metadata["revisits"] == len(answered)

    blob = next(c.body_sha256 for c in answered if c.kind == "page" and c.stored)
    path = crawl_data / "cas" / "sha256" / blob[:2] / blob[2:4] / blob  # type: ignore[index]
    path.unlink()
    failed = job.execute_in_process(partition_key=day, instance=dagster_instance, raise_on_error=False,
                                    run_config={"ops": {"export_warc_op": {"config": {
                                        "name": "again.wacz", "wacz": True}}}})
    assert not failed.success
    [failure] = [e for e in failed.all_node_events if e.is_failure]
    assert "not exported" in str(failure.event_specific_data)  # type: ignore[union-attr]
    assert (crawl_data / "exports" / "again.wacz").exists()  # the rest is written
