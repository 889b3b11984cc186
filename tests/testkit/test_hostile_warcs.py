"""Each hostile WARC is what it says: the fault is at `bad_offset`, the good records read from theirs.

Where warcio's own behaviour on the file is worth knowing for the importer (it stops silently
after a truncated member, crashes on a response without a target URI, reads a gzip member's
lying Content-Length without noticing), a test pins it.
"""

from __future__ import annotations

import hashlib
import posixpath
import zlib
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from archive_testkit.hostile_records import HostileFile
from archive_testkit.hostile_warcs import (
    ODD_URIS,
    TWO_GB,
    content_length_2gb_warc,
    content_length_too_long_warc,
    content_length_too_short_warc,
    no_target_uri_warc,
    odd_target_uri_warc,
    truncated_member_warc,
    warc_1_0_file,
    wrong_payload_digest_warc,
)
from archive_testkit.warc_reading import warcio_check

pytestmark = pytest.mark.unit


def _member_at(data: bytes, offset: int) -> tuple[bytes, bool]:
    """The gzip member starting at `offset`, decompressed, and whether it is complete."""
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    return inflater.decompress(data[offset:]), inflater.eof


def _declared_and_actual(record: bytes) -> tuple[int, int]:
    head, _, rest = record.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    declared = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"Content-Length"))
    return declared, len(rest) - 4


def _assert_good_records_read(hostile: HostileFile) -> None:
    """Each good record reads with warcio from its offset, digests checked, with its body."""
    assert hostile.good
    with hostile.path.open("rb") as stream:
        for good in hostile.good:
            stream.seek(good.offset)
            record = next(iter(ArchiveIterator(stream, check_digests="raise")))
            assert record.rec_headers.get_header("WARC-Target-URI") == good.url
            if record.rec_type != "revisit":  # a revisit's body is the one it refers to
                assert hashlib.sha256(record.content_stream().read()).hexdigest() == good.payload_sha256


def test_truncated_member_is_cut_short_and_the_next_member_is_whole(tmp_path: Path) -> None:
    hostile = truncated_member_warc(tmp_path / "truncated.warc.gz")
    data = hostile.path.read_bytes()
    assert hostile.bad_offset is not None
    partial, complete = _member_at(data, hostile.bad_offset)
    assert not complete and partial.startswith(b"WARC/1.1\r\n")
    record, complete = _member_at(data, hostile.good[1].offset)
    assert complete and b"WARC-Target-URI: " + hostile.good[1].url.encode() in record
    assert b"\x1f\x8b\x08" not in data[hostile.bad_offset + 3:hostile.good[1].offset]  # no false member start
    _assert_good_records_read(hostile)
    with hostile.path.open("rb") as stream:  # warcio stops at the cut without a word: the last record is lost
        urls = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(stream)]
    assert hostile.good[1].url not in urls


@pytest.mark.parametrize(("make", "delta"), [(content_length_too_long_warc, 100),
                                              (content_length_too_short_warc, -20)])
def test_a_lying_content_length_in_a_gzip_member(
    tmp_path: Path, make: Callable[..., HostileFile], delta: int,
) -> None:
    hostile = make(tmp_path / "lying.warc.gz")
    assert hostile.bad_offset is not None
    record, complete = _member_at(hostile.path.read_bytes(), hostile.bad_offset)
    declared, actual = _declared_and_actual(record)
    assert complete and declared - actual == delta
    _assert_good_records_read(hostile)


@pytest.mark.parametrize("make", [content_length_too_long_warc, content_length_too_short_warc])
def test_a_lying_content_length_in_a_plain_warc_breaks_warcios_reading(
    tmp_path: Path, make: Callable[..., HostileFile],
) -> None:
    hostile = make(tmp_path / "lying.warc", gzipped=False)
    data = hostile.path.read_bytes()
    assert data[hostile.bad_offset:].startswith(b"WARC/1.1\r\n")
    with pytest.raises(ArchiveLoadFailed), hostile.path.open("rb") as stream:
        list(ArchiveIterator(stream, check_digests="raise"))
    _assert_good_records_read(hostile)


def test_two_gigabytes_declared_in_a_small_file(tmp_path: Path) -> None:
    hostile = content_length_2gb_warc(tmp_path / "2gb.warc.gz")
    data = hostile.path.read_bytes()
    assert hostile.bad_offset is not None
    record, _ = _member_at(data, hostile.bad_offset)
    assert _declared_and_actual(record)[0] == TWO_GB == 2_147_483_648
    assert len(data) < 4096
    _assert_good_records_read(hostile)


def test_a_response_without_a_target_uri(tmp_path: Path) -> None:
    hostile = no_target_uri_warc(tmp_path / "no-uri.warc.gz")
    assert hostile.bad_offset is not None
    record, _ = _member_at(hostile.path.read_bytes(), hostile.bad_offset)
    assert b"WARC-Type: response\r\n" in record and b"WARC-Target-URI" not in record
    with pytest.raises(AttributeError), hostile.path.open("rb") as stream:  # warcio 1.7 crashes on it
        list(ArchiveIterator(stream))
    _assert_good_records_read(hostile)


@pytest.mark.parametrize("case", sorted(ODD_URIS))
def test_odd_target_uris_are_written_as_raw_header_bytes(tmp_path: Path, case: str) -> None:
    hostile = odd_target_uri_warc(tmp_path / f"{case}.warc.gz", case=case)
    assert hostile.bad_offset is not None
    record, complete = _member_at(hostile.path.read_bytes(), hostile.bad_offset)
    assert complete and b"\r\nWARC-Target-URI: " + ODD_URIS[case] + b"\r\n" in record
    _assert_good_records_read(hostile)


def test_what_the_odd_uris_become_once_decoded() -> None:
    decoded = {case: unquote(raw.decode()) for case, raw in ODD_URIS.items()}
    assert "\r\n" in decoded["continuation-line"] and "\r\n" in decoded["percent-newline"]
    assert "\n" in decoded["bare-lf"] and "\x00" in decoded["percent-nul"]
    assert posixpath.normpath(urlsplit(decoded["dot-segments"]).path) == "/etc/passwd"


@pytest.mark.parametrize("algorithm", ["sha1", "sha256"])
def test_a_payload_digest_of_other_bytes_fails_warcios_check(tmp_path: Path, algorithm: str) -> None:
    hostile = wrong_payload_digest_warc(tmp_path / "digest.warc.gz", algorithm=algorithm)
    problems = []
    with hostile.path.open("rb") as stream:
        records = ArchiveIterator(stream, check_digests=True)
        for record in records:
            record.content_stream().read()
            problems.append((records.get_record_offset(), list(record.digest_checker.problems)))
    [(offset, found)] = [(offset, found) for offset, found in problems if found]
    assert offset == hostile.bad_offset
    assert len(found) == 1 and found[0].startswith(f"payload digest failed {algorithm}:")
    assert warcio_check([hostile.path]) != 0
    _assert_good_records_read(hostile)


def test_a_warc_1_0_file_is_whole_and_valid(tmp_path: Path) -> None:
    hostile = warc_1_0_file(tmp_path / "old.warc.gz")
    assert hostile.bad_offset is None and not hostile.problem
    with hostile.path.open("rb") as stream:
        records = [(r.rec_type, r.rec_headers.protocol, r.rec_headers.get_header("WARC-Profile"))
                   for r in ArchiveIterator(stream, check_digests="raise")]
    assert [kind for kind, _, _ in records] == ["warcinfo", "request", "response", "revisit", "resource",
                                                "metadata"]
    assert {version for _, version, _ in records} == {"WARC/1.0"}
    assert records[3][2] == "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"
    assert warcio_check([hostile.path]) == 0
    _assert_good_records_read(hostile)
