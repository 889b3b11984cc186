"""Segments in an S3 primary's bucket (moto_server): found by listing `sessions/`, read whole
or by range, never overwritten; the crawler's spool uploads them and keeps what fails."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from archive_pipelines.blobstore import BlobIntegrityError
from archive_pipelines.captures.segment_source import (
    BucketSegments,
    LocalSegments,
    segment_source,
)
from archive_pipelines.captures.segment_spool import upload_spooled_segments
from archive_pipelines.storage.assembly import open_storage
from archive_testkit.servers.faulty_http import closed_port_url
from tests.helpers.s3_primary import s3_primary_data_dir

DAY = "2026-11-28"


def write_segment(data_dir: Path, session: str, name: str, data: bytes) -> Path:
    path = data_dir / "sessions" / DAY / session / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
def bucket_source(s3_endpoint_url: str, s3_bucket: str, tmp_path: Path) -> BucketSegments:
    settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=s3_endpoint_url,
                                   bucket=s3_bucket)
    source = segment_source(open_storage(settings).primary.store, settings.data_dir)
    assert isinstance(source, BucketSegments)
    return source


def test_the_spool_uploads_segments_found_by_listing_the_bucket(
        bucket_source: BucketSegments) -> None:
    data_dir = bucket_source.data_dir
    session = str(uuid.uuid4())
    names = ["20261128T101010000000Z_000001.jsonl", "20261128T101011000000Z_000002.jsonl"]
    for n, name in enumerate(names):
        write_segment(data_dir, session, name, f'{{"n":{n}}}\n{{"m":{n}}}\n'.encode())
    write_segment(data_dir, session, ".20261128T101012000000Z_000003.1.tmp", b"half")

    done = upload_spooled_segments(bucket_source, data_dir)
    assert (done.uploaded, done.error) == ([f"sessions/{DAY}/{session}/{n}" for n in names], "")
    assert not (data_dir / "sessions" / DAY / session / names[0]).exists()

    found, skipped = bucket_source.find()
    assert [s.relative for s in found] == done.uploaded and skipped == []
    assert [s.session_id for s in found] == [session, session]
    first = found[0].relative
    assert bucket_source.read(first).data == b'{"n":0}\n{"m":0}\n'
    assert bucket_source.read_range(first, 8, 7) == b'{"m":0}'
    assert bucket_source.read_range(first, 100, 10) == b""
    assert bucket_source.size(first) == 16 and bucket_source.modified(first) is not None
    assert bucket_source.days() == [DAY]
    assert bucket_source.find(str(uuid.uuid4())) == ([], [])

    # Written once: the same bytes again are accepted, other bytes refused.
    again = write_segment(data_dir, session, names[0], b'{"n":0}\n{"m":0}\n')
    bucket_source.store_file(first, again)
    again.write_bytes(b'{"other":1}\n')
    with pytest.raises(BlobIntegrityError, match="exists with other bytes"):
        bucket_source.store_file(first, again)
    assert bucket_source.read(first).data == b'{"n":0}\n{"m":0}\n'

    assert bucket_source.remove(first) and not bucket_source.remove(first)
    with pytest.raises(FileNotFoundError):
        bucket_source.read(first)


def test_odd_names_in_the_bucket_are_skipped_and_reported(bucket_source: BucketSegments,
                                                          tmp_path: Path) -> None:
    odd = tmp_path / "odd"
    odd.write_bytes(b"x\n")
    for name in ("sessions/not-a-day/x/y.jsonl", f"sessions/{DAY}/not-a-uuid/a.jsonl",
                 f"sessions/{DAY}/{uuid.uuid4()}/notes.txt", "sessions/compacted/a.idx"):
        bucket_source.store_file(name, odd)
    found, skipped = bucket_source.find()
    assert found == [] and len(skipped) == 3


def test_an_upload_that_fails_leaves_the_segment_for_the_next_pass(
        s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("ARCHIVE_S3_CONNECT_TIMEOUT", "1")
    settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=closed_port_url(),
                                   bucket=s3_bucket)
    source = segment_source(open_storage(settings).primary.store, settings.data_dir)
    path = write_segment(settings.data_dir, str(uuid.uuid4()),
                         "20261128T101010000000Z_000001.jsonl", b'{"n":0}\n')
    done = upload_spooled_segments(source, settings.data_dir)
    assert done.uploaded == [] and done.left == 1 and "cannot reach the S3 endpoint" in done.error
    assert path.read_bytes() == b'{"n":0}\n'


@pytest.mark.unit
def test_a_local_primary_has_no_spool(tmp_path: Path) -> None:
    source = LocalSegments(tmp_path)
    path = write_segment(tmp_path, str(uuid.uuid4()), "20261128T101010000000Z_000001.jsonl",
                         b"{}\n")
    assert upload_spooled_segments(source, tmp_path).uploaded == []
    assert path.exists()


def test_the_captures_sensor_plans_runs_from_the_bucket(s3_endpoint_url: str, s3_bucket: str,
                                                        tmp_path: Path) -> None:
    from archive_pipelines.captures.segment_source import settings_segment_source
    from archive_pipelines.captures.sensor_logic import next_capture_runs

    settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=s3_endpoint_url,
                                   bucket=s3_bucket)
    source = settings_segment_source(settings)
    session = str(uuid.uuid4())
    for name in ("20261128T101010000000Z_000001.jsonl", "20261128T101011000000Z_000002.jsonl"):
        write_segment(settings.data_dir, session, name, b"{}\n")
    assert upload_spooled_segments(source, settings.data_dir).left == 0
    assert source.days() == [DAY]
    plan = next_capture_runs(open_storage(settings).catalog, settings.data_dir, busy_days=set(),
                             reported_days=set(), source=source)
    assert [(run.day, run.segments) for run in plan.runs] == [(DAY, 2)]
    assert len(plan.pending) == 2 and not local_files(settings.data_dir)


def local_files(data_dir: Path) -> list[Path]:
    return list((data_dir / "sessions").rglob("*.jsonl"))
