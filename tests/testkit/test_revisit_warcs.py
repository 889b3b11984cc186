"""A WARC written by warcio with revisit records: what each record is and what it refers to."""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from archive_testkit.revisit_warcs import (
    SAMPLE_PAGES,
    UNRESOLVABLE_BODY,
    UNRESOLVABLE_REFERS_TO,
    sha1_base32,
    write_revisit_warc,
)
from archive_testkit.warc_reading import read_warc, warcio_check

pytestmark = pytest.mark.unit


def test_repeated_bodies_become_revisits_naming_the_first_response(tmp_path: Path) -> None:
    written = write_revisit_warc(tmp_path / "revisits.warc.gz")
    records = read_warc(written.path.read_bytes())  # raises on a digest mismatch
    assert [(r.kind, r.header("WARC-Target-URI")) for r in records] == [
        (w.kind, w.url) for w in written.records]
    assert [w.kind for w in written.records] == ["response", "response", "revisit", "revisit", "revisit",
                                                 "response"]
    responses = {(w.url, w.date): w for w in written.records if w.kind == "response"}
    assert len(written.revisits) == 2
    for revisit in written.revisits:
        assert revisit.refers_to is not None
        target = responses[revisit.refers_to]  # resolvable from this file
        assert (target.payload_digest, target.payload_sha256) == (
            revisit.payload_digest, revisit.payload_sha256)
    assert {r.url for r in written.revisits} == {SAMPLE_PAGES[2][0], SAMPLE_PAGES[3][0]}
    assert len(responses) == len({hashlib.sha256(body).digest() for _, body in SAMPLE_PAGES})


def test_revisit_headers_are_warcios_identical_payload_digest_profile(tmp_path: Path) -> None:
    written = write_revisit_warc(tmp_path / "revisits.warc.gz")
    for record, meta in zip(read_warc(written.path.read_bytes()), written.records, strict=True):
        assert record.header("WARC-Payload-Digest") == meta.payload_digest
        if meta.kind == "revisit":
            assert record.header("WARC-Profile") == (
                "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest")
            assert (record.header("WARC-Refers-To-Target-URI"), record.header("WARC-Refers-To-Date")) == (
                meta.refers_to)
            assert record.payload == b"" and record.http_statusline == "HTTP/1.1 200 OK"
        else:
            assert meta.payload_digest == sha1_base32(record.payload)


def test_the_unresolvable_revisit_names_a_capture_the_file_lacks(tmp_path: Path) -> None:
    written = write_revisit_warc(tmp_path / "revisits.warc.gz")
    lost = written.unresolvable
    assert lost.kind == "revisit" and lost.refers_to == UNRESOLVABLE_REFERS_TO
    assert lost.refers_to not in {(w.url, w.date) for w in written.records if w.kind == "response"}
    assert lost.payload_digest == sha1_base32(UNRESOLVABLE_BODY)
    assert lost.payload_digest not in {w.payload_digest for w in written.records if w.kind == "response"}
    assert written.records.index(lost) < len(written.records) - 1  # records follow it


@pytest.mark.parametrize("gzipped", [True, False])
def test_offsets_seek_to_each_record(tmp_path: Path, *, gzipped: bool) -> None:
    written = write_revisit_warc(tmp_path / "revisits.warc", gzip=gzipped)
    with written.path.open("rb") as stream:
        for meta in written.records:
            stream.seek(meta.offset)
            record = next(iter(ArchiveIterator(stream)))
            assert (record.rec_type, record.rec_headers.get_header("WARC-Date")) == (meta.kind, meta.date)
    assert warcio_check([written.path]) == 0


def test_gzip_is_one_member_per_record(tmp_path: Path) -> None:
    written = write_revisit_warc(tmp_path / "revisits.warc.gz")
    data, members = written.path.read_bytes(), []
    position = 0
    while position < len(data):
        members.append(position)
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        inflater.decompress(data[position:])
        position = len(data) - len(inflater.unused_data)
    assert members == [w.offset for w in written.records]
