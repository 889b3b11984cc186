"""Withdrawn URL prefixes, compared as SURT key prefixes (scheme and www. ignored)."""

from __future__ import annotations

import pytest

from archive_pipelines.replay.exclusions import BadExclusion, Exclusions
from archive_pipelines.surt import surt, urlkey

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("prefix", "withdrawn", "kept"), [
    ("http://example.com/private/",
     ["https://www.example.com/private/", "http://example.com/private", "http://example.com/private/a?b=1"],
     ["http://example.com/privateer", "http://example.com/", "http://other.com/private/"]),
    ("example.com/a",
     ["http://example.com/a", "http://example.com/ab", "https://example.com/a/b"],
     ["http://example.com/b", "http://sub.example.com/a"]),
    ("example.com",
     ["http://example.com/", "https://www.example.com/x", "http://example.com/a/b?c"],
     ["http://sub.example.com/", "http://example.com:8080/", "http://example.community/"]),
    ("*.example.com",
     ["http://example.com/", "http://a.b.example.com/x", "https://sub.example.com/"],
     ["http://example.community/", "http://notexample.com/", "http://example.org/"]),
])
def test_a_prefix_withdraws_exactly_the_urls_under_it(
        prefix: str, withdrawn: list[str], kept: list[str]) -> None:
    exclusions = Exclusions([prefix])
    assert [url for url in withdrawn if not exclusions.excludes_url(url)] == []
    assert [url for url in kept if exclusions.excludes_url(url)] == []
    assert all(exclusions.excludes_key(urlkey(url)) for url in withdrawn)


def test_nested_and_neighbouring_prefixes_are_all_applied() -> None:
    exclusions = Exclusions(["example.com/a/b", "example.com/a", "example.com/ab/", "example.com/c/d"])
    urls = {"http://example.com/a/b/c": True, "http://example.com/a": True,
            "http://example.com/ab": True, "http://example.com/abc": True,
            "http://example.com/c": False, "http://example.com/c/d": True,
            "http://example.com/c/e": False, "http://example.com/b": False}
    assert {url: exclusions.excludes_url(url) for url in urls} == urls


def test_the_covering_prefix_is_what_a_scan_may_skip() -> None:
    exclusions = Exclusions(["http://example.com/private/", "example.org"])
    assert exclusions.covering_prefix(surt("http://example.com/private/x")) == "com,example)/private/"
    # The folder itself is withdrawn, but nothing after it need be skipped.
    assert exclusions.excludes_key(surt("http://example.com/private"))
    assert exclusions.covering_prefix(surt("http://example.com/private")) is None
    assert exclusions.covering_prefix(surt("http://example.org/any")) == "org,example)"
    assert exclusions.covering_prefix(surt("http://example.com/")) is None


def test_no_exclusions_withdraw_nothing() -> None:
    none = Exclusions()
    assert not none and not none.excludes_url("http://example.com/")


def test_lines_with_comments_and_blanks() -> None:
    exclusions = Exclusions.from_lines(["# withdrawn on request", "", "  example.com/x  ", "\n"])
    assert exclusions and exclusions.entries == ("example.com/x",)
    assert exclusions.excludes_url("http://example.com/x/y")


@pytest.mark.parametrize("bad", ["", "   ", "example.com/a b", "urn:isbn:123", "*.", "mailto:x@y.z"])
def test_what_names_no_url_prefix_is_refused(bad: str) -> None:
    with pytest.raises(BadExclusion):
        Exclusions([bad])
