"""Wayback timestamps <-> capture times (epoch ms), cut-short timestamps as window ends."""

from __future__ import annotations

import calendar

import pytest

from archive_pipelines.replay.timestamps import BadTimestamp, end_ms, start_ms, timestamp_of

pytestmark = pytest.mark.unit


def _ms(*fields: int) -> int:
    return calendar.timegm((*fields, 0, 0, 0)) * 1000


@pytest.mark.parametrize(("timestamp", "start", "end"), [
    ("20261127010203", _ms(2026, 11, 27, 1, 2, 3), _ms(2026, 11, 27, 1, 2, 3) + 999),
    ("2026", _ms(2026, 1, 1, 0, 0, 0), _ms(2027, 1, 1, 0, 0, 0) - 1),
    ("202602", _ms(2026, 2, 1, 0, 0, 0), _ms(2026, 3, 1, 0, 0, 0) - 1),
    ("2024022", _ms(2024, 2, 20, 0, 0, 0), _ms(2024, 3, 1, 0, 0, 0) - 1),  # day 2x: up to the 29th
    ("20260231", _ms(2026, 2, 28, 0, 0, 0), _ms(2026, 3, 1, 0, 0, 0) - 1),  # brought into range
    ("202600", _ms(2026, 1, 1, 0, 0, 0), _ms(2026, 2, 1, 0, 0, 0) - 1),  # month 00: January
    ("2026113099", _ms(2026, 11, 30, 23, 0, 0), _ms(2026, 12, 1, 0, 0, 0) - 1),
    ("2", _ms(2000, 1, 1, 0, 0, 0), _ms(3000, 1, 1, 0, 0, 0) - 1),
    ("0", _ms(1000, 1, 1, 0, 0, 0), _ms(1001, 1, 1, 0, 0, 0) - 1),  # years before 1000: 1000
])
def test_a_cut_short_timestamp_spans_every_moment_it_can_mean(
        timestamp: str, start: int, end: int) -> None:
    assert (start_ms(timestamp), end_ms(timestamp)) == (start, end)


@pytest.mark.parametrize("bad", [
    "", "2026-11-27", "202611271234567", "\uff12\uff10\uff12\uff16", " 2026", "20x6"])
def test_anything_but_1_to_14_digits_is_refused(bad: str) -> None:
    with pytest.raises(BadTimestamp, match="1 to 14 digits"):
        start_ms(bad)
    with pytest.raises(BadTimestamp):
        end_ms(bad)


def test_a_capture_time_reads_as_its_second() -> None:
    at = _ms(2026, 11, 27, 23, 59, 58) + 999
    assert timestamp_of(at) == "20261127235958"
    assert start_ms(timestamp_of(at)) <= at <= end_ms(timestamp_of(at))
