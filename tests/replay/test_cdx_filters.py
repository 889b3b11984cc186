"""CDX filters (exact, contains, regular expressions per dialect, negation) and collapse."""

from __future__ import annotations

import time

import pytest

from archive_pipelines.replay.cdx_filters import Collapse, FilterError, parse_collapse, parse_filter
from tests.helpers.cdx_captures import capture

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("text", "value", "ia", "pywb"), [
    ("statuscode:200", "200", True, True),
    ("statuscode:20", "200", False, True),  # ia: the whole value; pywb: from the start
    ("status:2..", "200", True, True),
    ("!statuscode:200", "404", True, True),
    ("=mimetype:text/html", "text/html", True, True),
    ("=mime:text/htm", "text/html", False, False),
    ("~url:ample", "http://example.com/", True, True),
    ("!~url:ample", "http://example.com/", False, False),
    ("url:.*ample.*", "http://example.com/", True, True),
    ("url:ample", "http://example.com/", False, False),  # a regex is anchored at the start
    ("mimetype:text/.*", "text/css", True, True),
])
def test_a_filter_holds_as_its_dialect_matches(text: str, value: str, ia: bool, pywb: bool) -> None:
    assert parse_filter(text, dialect="ia").holds(value) is ia
    assert parse_filter(text, dialect="pywb").holds(value) is pywb


def test_a_filter_expression_may_hold_colons() -> None:
    assert parse_filter("=url:http://a.test/", dialect="ia").holds("http://a.test/")


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a*)*b", "(a|aa)+$", "((ab)*c)*", "(?:x+y?)+", "(.*a){5}"])
def test_patterns_that_backtrack_without_bound_are_refused(pattern: str) -> None:
    with pytest.raises(FilterError):
        parse_filter(f"url:{pattern}", dialect="ia")


def test_an_accepted_pattern_matches_a_long_hostile_url_quickly() -> None:
    hostile = "http://example.com/" + "a" * 8000 + "!"
    started = time.perf_counter()
    for pattern in (".*a.*b", "(a|b)*c", "[a-z]+://.*x", "a{1,100}b", ".*a+b"):
        parse_filter(f"url:{pattern}", dialect="ia").holds(hostile)
    assert time.perf_counter() - started < 2


def test_collapse_keeps_the_first_of_each_run_of_equal_values() -> None:
    field, length = parse_collapse("timestamp:8")
    collapse = Collapse(field, length)
    times = ["20260101000000", "20260101120000", "20260102000000", "20260101000000"]
    kept = [collapse.keeps(capture(timestamp=t), "ia") for t in times]
    assert kept == [True, False, True, True]  # adjacent runs only
    whole = Collapse(*parse_collapse("urlkey"))
    urls = ("http://a.test/", "https://a.test", "http://b.test/")
    assert [whole.keeps(capture(url=u), "ia") for u in urls] == [True, False, True]
