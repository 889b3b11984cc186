"""The wget-style WARC writer of archive_testkit, read back by warcio with digests checked."""

from __future__ import annotations

import gzip
import re
import zlib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from warcio.exceptions import ArchiveLoadFailed

from archive_testkit.warc_files import WgetFetch, WgetRun, wget_warc
from archive_testkit.warc_reading import ReadRecord, read_warc, warcio_check

PAGE = "https://example.com/blog/caf\u00e9/"
RUN = WgetRun(
    arguments=(
        "--no-verbose",
        "-e",
        "robots=off",
        "--warc-file=/data/archive/1700000000.5/warc/1700000000",
        "--page-requisites",
        "--user-agent=Mozilla/5.0 ArchiveBox/0.7.2 wget/1.21.3",
        "--compression=auto",
        PAGE,
    ),
    started=datetime(2023, 11, 14, 22, 13, 20, 500000, tzinfo=UTC),
    warc_name="1700000000.warc.gz",
)
FETCHES = (
    WgetFetch(
        PAGE,
        b'<html><link href="/css/site.css"></html>\n',
        "text/html",
        "example.com/blog/caf\u00e9/index.html",
    ),
    WgetFetch(
        "https://example.com/css/site.css", b"body{margin:0}\n", "text/css", "example.com/css/site.css"
    ),
    WgetFetch(
        "https://example.com/img/a b.png", bytes(range(256)) * 9, "image/png", "example.com/img/a b.png"
    ),
)


@pytest.fixture(scope="module")
def records() -> list[ReadRecord]:
    return read_warc(wget_warc(RUN, FETCHES))


@pytest.mark.unit
def test_warcio_check_passes_and_every_record_carries_a_block_digest(tmp_path: Path) -> None:
    path = tmp_path / RUN.warc_name
    path.write_bytes(wget_warc(RUN, FETCHES))
    assert warcio_check([path]) == 0
    records = read_warc(path.read_bytes())
    assert all(record.header("WARC-Block-Digest") for record in records)
    digests = [r.header("WARC-Payload-Digest") for r in records if r.kind == "response"]
    assert len(digests) == len(FETCHES) and all(d and d.startswith("sha1:") for d in digests)


@pytest.mark.unit
def test_a_changed_body_byte_fails_the_digest_check(tmp_path: Path) -> None:
    members = _gzip_members(wget_warc(RUN, FETCHES))
    css = next(i for i, m in enumerate(members) if b"WARC-Type: response" in m and b"margin:0" in m)
    members[css] = members[css].replace(b"margin:0", b"margin:1")  # same length, other bytes
    tampered = b"".join(gzip.compress(member, mtime=0) for member in members)
    path = tmp_path / "tampered.warc.gz"
    path.write_bytes(tampered)
    assert warcio_check([path]) == 1
    with pytest.raises(ArchiveLoadFailed, match="digest failed"):
        read_warc(tampered)


@pytest.mark.unit
def test_records_come_in_wgets_order(records: list[ReadRecord]) -> None:
    kinds = [record.kind for record in records]
    assert kinds == ["warcinfo", *["request", "response"] * len(FETCHES), "metadata", "resource", "resource"]
    targets = [r.header("WARC-Target-URI") for r in records if r.kind == "response"]
    assert targets == [
        "https://example.com/blog/caf%C3%A9/",
        "https://example.com/css/site.css",
        "https://example.com/img/a%20b.png",
    ]
    assert [r.header("WARC-Target-URI") for r in records[-3:]] == [
        "metadata://gnu.org/software/wget/warc/MANIFEST.txt",
        "metadata://gnu.org/software/wget/warc/wget_arguments.txt",
        "metadata://gnu.org/software/wget/warc/wget.log",
    ]


@pytest.mark.unit
def test_requests_and_responses_link_up_and_carry_the_bodies(records: list[ReadRecord]) -> None:
    warcinfo_id = records[0].header("WARC-Record-ID")
    assert all(r.header("WARC-Warcinfo-ID") == warcinfo_id for r in records[1:])
    pairs = list(zip(records[1:-3:2], records[2:-3:2], strict=True))
    for (request, response), fetch in zip(pairs, FETCHES, strict=True):
        assert response.header("WARC-Concurrent-To") == request.header("WARC-Record-ID")
        assert response.header("WARC-Target-URI") == request.header("WARC-Target-URI")
        assert response.header("WARC-IP-Address") == request.header("WARC-IP-Address")
        assert response.payload == fetch.body
        assert response.http_statusline == "HTTP/1.1 200 OK"
        assert dict(response.http_headers)["Content-Length"] == str(len(fetch.body))
        assert request.http_statusline is not None and request.http_statusline.startswith("GET /")
    referers = [dict(request.http_headers).get("Referer") for request, _ in pairs]
    assert referers == [None, "https://example.com/blog/caf%C3%A9/", "https://example.com/blog/caf%C3%A9/"]
    ids = [r.header("WARC-Record-ID") for r in records]
    assert len(set(ids)) == len(ids)


@pytest.mark.unit
def test_warcinfo_manifest_and_log_say_what_wget_says(records: list[ReadRecord]) -> None:
    info = records[0].payload.decode()
    assert info.startswith("software: Wget/1.21.3 (linux-gnu)\r\nformat: WARC File Format 1.0\r\n")
    assert "robots: off\r\n" in info
    assert '"--compression=auto" "https://example.com/blog/caf\u00e9/" \r\n' in info
    assert records[0].header("WARC-Filename") == "1700000000.warc.gz"
    metadata, arguments, log = records[-3:]
    assert metadata.payload == f"{records[0].header('WARC-Record-ID')}\n".encode()
    assert (
        arguments.header("WARC-Concurrent-To")
        == log.header("WARC-Concurrent-To")
        == metadata.header("WARC-Record-ID")
    )
    lines = log.payload.decode().splitlines()
    size = len(FETCHES[0].body)
    assert lines[0] == (
        f"2023-11-14 22:13:20 URL:https://example.com/blog/caf%C3%A9/ [{size}/{size}] "
        '-> "example.com/blog/caf\u00e9/index.html" [1]'
    )
    assert lines[3].startswith("FINISHED --2023-11-14 22:13:20--")
    assert re.fullmatch(r"Downloaded: 3 files, 2\.3K in [0-9.]+s \([0-9.]+ [KM]?B/s\)", lines[5])


@pytest.mark.unit
def test_the_same_run_gives_the_same_bytes_and_another_run_other_ids() -> None:
    assert wget_warc(RUN, FETCHES) == wget_warc(RUN, FETCHES)
    later = WgetRun(RUN.arguments, RUN.started.replace(year=2024), RUN.warc_name)
    first = {r.header("WARC-Record-ID") for r in read_warc(wget_warc(RUN, FETCHES))}
    second = {r.header("WARC-Record-ID") for r in read_warc(wget_warc(later, FETCHES))}
    assert not first & second


def _gzip_members(data: bytes) -> list[bytes]:
    members = []
    while data:
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        members.append(inflater.decompress(data))
        data = inflater.unused_data
    return members
