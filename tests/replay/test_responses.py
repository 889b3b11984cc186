"""Replayed headers: what acts on a browser today is renamed, framing is ours; byte ranges."""

from __future__ import annotations

import pytest

from archive_pipelines.replay.responses import (
    ByteRange,
    Unsatisfiable,
    parse_range,
    replay_headers,
)

pytestmark = pytest.mark.unit


def test_live_acting_headers_are_renamed_and_framing_dropped() -> None:
    original = [("Set-Cookie", "a=1"), ("Strict-Transport-Security", "max-age=1"),
                ("Content-Security-Policy", "default-src *"), ("Content-Length", "99"),
                ("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked"),
                ("Connection", "close"), ("Content-Type", "text/html"),
                ("Content-Language", "fr"), ("X-Thing", "kept"), ("Link", "</a>; rel=next")]
    assert replay_headers(original) == [
        ("X-Archive-Orig-Set-Cookie", "a=1"),
        ("X-Archive-Orig-Strict-Transport-Security", "max-age=1"),
        ("X-Archive-Orig-Content-Security-Policy", "default-src *"),
        ("X-Archive-Orig-Content-Length", "99"),
        ("X-Archive-Orig-Content-Encoding", "gzip"),
        ("Content-Language", "fr"), ("X-Thing", "kept"),
        ("X-Archive-Orig-Link", "</a>; rel=next"),
    ]


def test_headers_that_could_split_a_response_are_left_out() -> None:
    assert replay_headers([("X-A", "1\r\nSet-Cookie: b=2"), ("Bad Name", "x"),
                           ("X-B", "y" * 9000), ("X-C", "ok")]) == [("X-C", "ok")]


@pytest.mark.parametrize(("header", "size", "expected"), [
    (None, 10, None),
    ("bytes=0-3", 10, ByteRange(0, 3, 10)),
    ("bytes=5-", 10, ByteRange(5, 9, 10)),
    ("bytes=-4", 10, ByteRange(6, 9, 10)),
    ("bytes=-40", 10, ByteRange(0, 9, 10)),
    ("bytes=8-400", 10, ByteRange(8, 9, 10)),
    ("bytes=0-1,4-5", 10, None),  # several ranges: the whole body
    ("items=0-1", 10, None),
    ("bytes=5-2", 10, None),
    ("bytes=a-b", 10, None),
])
def test_ranges(header: str | None, size: int, expected: ByteRange | None) -> None:
    assert parse_range(header, size) == expected


@pytest.mark.parametrize(("header", "size"), [("bytes=10-", 10), ("bytes=-0", 10), ("bytes=0-", 0)])
def test_ranges_past_the_end_are_unsatisfiable(header: str, size: int) -> None:
    with pytest.raises(Unsatisfiable):
        parse_range(header, size)


def test_content_range() -> None:
    assert ByteRange(6, 9, 10).content_range() == "bytes 6-9/10"
    assert ByteRange(6, 9, 10).length == 4
