"""A record of a stored WARC read by ranged reads of its blob (`stored_records`) is the record
a read of the file finds there: the same WARC and HTTP header blocks, in every layout; a header
block longer than the first window is read whole; an offset where no record starts is an
error, never another record. On S3 a record costs one ranged GET."""

from __future__ import annotations

import random
from io import BytesIO
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive_pipelines.blobstore import LocalBlobStore, S3BlobStore
from archive_pipelines.warc import stored_records
from archive_pipelines.warc.capture_records import read_capture_record
from archive_pipelines.warc.stored_records import ReadAhead, heads_complete, read_stored_record
from archive_pipelines.warc.warc_files import FoundRecord, Layout, detect_layout, iter_records
from archive_testkit.warc_variants import write_warc_variants


def _heads(found: FoundRecord) -> tuple[object, ...]:
    record = found.record
    http = record.http_headers
    return (found.offset, record.rec_type, record.rec_headers.headers,
            None if http is None else (http.statusline, http.headers), found.header_problem)


def _as_read(path: Path) -> list[tuple[object, ...]]:
    layout = detect_layout(path)
    return [_heads(item) for item in iter_records(path, layout)
            if isinstance(item, FoundRecord)]


def _big_header_warc(path: Path) -> None:
    """Responses whose HTTP header block (~300 KiB of hex: ~150 KiB gzipped) is far longer
    than the first window."""
    noise = random.Random(7)
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/plain"), *[
            (f"X-Long-{n}", noise.randbytes(500).hex()) for n in range(300)]],
            protocol="HTTP/1.1")
        body = b"body" * 50_000
        for number in range(2):
            writer.write_record(writer.create_warc_record(
                f"http://example.com/{number}", "response", payload=BytesIO(body),
                length=len(body), http_headers=headers))


@pytest.mark.unit
@pytest.mark.parametrize("variant", ["per-record-gzip", "whole-gzip", "plain"])
def test_every_record_reads_as_the_file_reads(tmp_path: Path, variant: str) -> None:
    path = write_warc_variants(tmp_path / "warcs")[variant]
    store = LocalBlobStore(tmp_path / "store", name="primary", codec="raw")
    sha256 = store.put_file(path).sha256
    layout = detect_layout(path)
    expected = _as_read(path)
    assert len(expected) > 5
    for heads in expected:
        offset = heads[0]
        assert isinstance(offset, int)
        assert _heads(read_stored_record(store, sha256, layout, offset=offset)) == heads


@pytest.mark.unit
def test_a_header_longer_than_the_window_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "big.warc.gz"
    _big_header_warc(path)
    store = LocalBlobStore(tmp_path / "store", name="primary", codec="raw")
    sha256 = store.put_file(path).sha256
    expected = _as_read(path)
    for heads in expected:
        assert isinstance(heads[0], int)
        got = read_stored_record(store, sha256, Layout.RECORD_GZIP, offset=heads[0])
        assert _heads(got) == heads
    http = [h for h in expected if h[3] is not None]
    assert http and all(len(h[3][1]) == 301 for h in http)  # type: ignore[index]


@pytest.mark.unit
def test_a_cut_header_block_is_not_complete() -> None:
    record = (b"WARC/1.1\r\nWARC-Type: response\r\nContent-Length: 5000\r\n\r\n"
              b"HTTP/1.1 200 OK\r\nX-A: b\r\n")
    assert not heads_complete(record)
    assert heads_complete(record + b"\r\nbody")
    assert not heads_complete(b"WARC/1.1\r\nWARC-Type: response\r\n")
    assert heads_complete(b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 9000\r\n\r\nab")


@pytest.mark.unit
@pytest.mark.parametrize("variant", ["per-record-gzip", "plain"])
def test_no_record_at_an_offset_is_an_error(tmp_path: Path, variant: str) -> None:
    path = write_warc_variants(tmp_path / "warcs")[variant]
    store = LocalBlobStore(tmp_path / "store", name="primary", codec="raw")
    sha256 = store.put_file(path).sha256
    layout = detect_layout(path)
    with pytest.raises(ValueError):
        read_stored_record(store, sha256, layout, offset=7)
    with pytest.raises(ValueError):
        read_stored_record(store, sha256, layout, offset=path.stat().st_size + 10)


def test_on_s3_a_record_is_one_ranged_get(tmp_path: Path, s3_endpoint_url: str,
                                          s3_bucket: str, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    path = write_warc_variants(tmp_path / "warcs")["per-record-gzip"]
    store = S3BlobStore(bucket=s3_bucket, name="primary", codec="raw",
                        endpoint_url=s3_endpoint_url)
    sha256 = store.put_file(path).sha256
    expected = _as_read(path)
    store.take_request_counts()
    for heads in expected:
        assert isinstance(heads[0], int)
        assert _heads(read_stored_record(store, sha256, Layout.RECORD_GZIP,
                                         offset=heads[0])) == heads
    assert store.take_request_counts() == {"GetObject": len(expected)}
    big = tmp_path / "big.warc.gz"
    _big_header_warc(big)
    big_sha = store.put_file(big).sha256
    monkeypatch.setattr(stored_records, "WINDOW", 16 * 1024)
    store.take_request_counts()
    first = read_stored_record(store, big_sha, Layout.RECORD_GZIP, offset=0)
    assert _heads(first) == _as_read(big)[0]
    assert store.take_request_counts() == {"GetObject": 3}  # windows of 16, 64 and 256 KiB


def test_on_s3_a_missing_warc_is_an_unreadable_record(tmp_path: Path, s3_endpoint_url: str,
                                                      s3_bucket: str) -> None:
    """As a local file that is gone: the replay then serves the body without the recorded
    headers, an export reports the capture."""
    store = S3BlobStore(bucket=s3_bucket, name="primary", codec="raw",
                        endpoint_url=s3_endpoint_url)
    with pytest.raises(OSError, match=r"stored WARC 000000000000: .*not found"):
        read_capture_record(tmp_path, store, f"imports/{'0' * 64}/records-gzip/0-10",
                            record_offset=0)


@pytest.mark.parametrize("variant", ["per-record-gzip", "plain"])
def test_on_s3_records_read_in_order_share_a_read_ahead(
        tmp_path: Path, s3_endpoint_url: str, s3_bucket: str, variant: str) -> None:
    path = write_warc_variants(tmp_path / "warcs")[variant]
    big = tmp_path / "big.warc.gz"
    _big_header_warc(big)
    store = S3BlobStore(bucket=s3_bucket, name="primary", codec="raw",
                        endpoint_url=s3_endpoint_url)
    ahead = ReadAhead(size=256 * 1024)
    for warc in (path, big, path):  # another file between: its own reads
        sha256 = store.put_file(warc).sha256
        layout = detect_layout(warc)
        store.take_request_counts()
        for heads in _as_read(warc):
            assert isinstance(heads[0], int)
            got = read_stored_record(store, sha256, layout, offset=heads[0], ahead=ahead)
            assert _heads(got) == heads
        # A small file: one GET for all its records; the ~300 KiB records: one or two each.
        gets = store.take_request_counts().get("GetObject", 0)
        assert gets == 1 if warc == path else 1 <= gets <= 3, (warc.name, gets)
