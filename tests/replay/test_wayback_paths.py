"""Replay paths: timestamps, modifiers, forgiven URL spellings, and what is refused."""

from __future__ import annotations

import pytest

from archive_pipelines.replay.timestamps import timestamp_of
from archive_pipelines.replay.wayback_paths import (
    BadReplayPath,
    WaybackPath,
    parse_wayback_path,
    timestamp_ms,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("rest", "expected"), [
    ("20261125103000/http://example.com/a?b=1", WaybackPath("20261125103000", "", "http://example.com/a?b=1")),
    ("2026id_/https://example.com/", WaybackPath("2026", "id_", "https://example.com/")),
    ("2/http://example.com/", WaybackPath("2", "", "http://example.com/")),
    ("20261125im_/example.com/x.png", WaybackPath("20261125", "im_", "http://example.com/x.png")),
    ("2026/http:/example.com/", WaybackPath("2026", "", "http://example.com/")),
    ("2026///example.com/", WaybackPath("2026", "", "http://example.com/")),
    ("http://example.com/", WaybackPath("", "", "http://example.com/")),
    ("example.com", WaybackPath("", "", "http://example.com")),
])
def test_a_path_gives_its_timestamp_modifier_and_url(rest: str, expected: WaybackPath) -> None:
    assert parse_wayback_path(rest) == expected


@pytest.mark.parametrize(("rest", "message"), [
    ("1" * 40 + "/http://example.com/", "bad timestamp"),
    ("123456789012345/http://example.com/", "bad timestamp"),
    ("2026xx/http://example.com/", "bad timestamp"),
    ("2026/http://example.com/%00", "NUL"),
    ("2026/http://example.com/\x00", "NUL"),
    ("2026/http://example.com/" + "a" * 100_000, "at most 8,192"),
    ("2026/", "no URL given"),
    ("2026/ftp://example.com/", "only http and https"),
    ("2026/javascript:alert(1)", "bad URL"),
    ("2026/http://", "no host"),
    ("2026/http://example.com:99999/", "bad URL"),
])
def test_bad_paths_are_refused_with_a_reason(rest: str, message: str) -> None:
    with pytest.raises(BadReplayPath, match=message):
        parse_wayback_path(rest)


@pytest.mark.parametrize(("timestamp", "expected"), [
    ("20261125103001", "20261125103001"),
    ("2026", "20260101000000"),
    ("202611", "20261101000000"),
    ("20261340", "20261231000000"),  # month and day clamped
    ("20260230", "20260228000000"),
    ("20261125256161", "20261125235959"),
    ("2", "20000101000000"),  # a short year is padded with zeros
])
def test_timestamps_pad_to_the_start_of_their_period(timestamp: str, expected: str) -> None:
    assert timestamp_of(timestamp_ms(timestamp)) == expected


def test_timestamps_round_trip_to_the_second() -> None:
    ms = 1_790_000_000_123
    assert timestamp_ms(timestamp_of(ms)) == ms - 123


def test_a_full_timestamp_means_the_middle_of_its_second() -> None:
    assert parse_wayback_path("20261125103001/x.test/").at_ms == \
        timestamp_ms("20261125103001") + 500
    assert parse_wayback_path("2026/x.test/").at_ms == timestamp_ms("2026")
    assert parse_wayback_path("x.test/").at_ms is None
