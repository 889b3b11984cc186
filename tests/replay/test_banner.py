"""The replay banner: its facts, its escaping, and its place in a rewritten page."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from archive_pipelines.replay.archive_urls import ArchiveUrls
from archive_pipelines.replay.banner import BANNER_ID, capture_time_text, render_banner
from archive_pipelines.replay.rewrite_html import HtmlRewriter

pytestmark = pytest.mark.unit


class _Elements(HTMLParser):
    """Start tags with their attributes, and the text, as a browser-like parser reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(markup: str) -> _Elements:
    parser = _Elements()
    parser.feed(markup)
    parser.close()
    return parser


@pytest.mark.parametrize(("timestamp", "text"), [
    ("20200102030405", "2020-01-02 03:04:05 UTC"),
    ("2020", "2020-01-01 00:00:00 UTC"),
    ("202006", "2020-06-01 00:00:00 UTC"),
])
def test_the_capture_time_is_shown_in_utc(timestamp: str, text: str) -> None:
    assert capture_time_text(timestamp) == text


@pytest.mark.parametrize("timestamp", ["", "x", "1" * 15, "2020-01-01"])
def test_a_bad_timestamp_is_refused(timestamp: str) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        capture_time_text(timestamp)


def test_the_banner_links_the_neighbours_and_the_calendar() -> None:
    banner = render_banner(timestamp="20200102030405", original_url="http://example.com/a",
                           calendar_href="/web/*/http://example.com/a",
                           previous_href="/web/20190101000000/http://example.com/a",
                           next_href="/web/20210101000000/http://example.com/a")
    parsed = parse(banner)
    links = [attrs["href"] for tag, attrs in parsed.tags if tag == "a"]
    assert links == ["/web/20190101000000/http://example.com/a",
                     "/web/20210101000000/http://example.com/a", "/web/*/http://example.com/a"]
    text = "".join(parsed.text)
    assert "2020-01-02 03:04:05 UTC" in text
    assert "http://example.com/a" in text
    assert parsed.tags[0] == ("div", parsed.tags[0][1]) and parsed.tags[0][1]["id"] == BANNER_ID


def test_without_neighbours_only_the_calendar_is_linked() -> None:
    parsed = parse(render_banner(timestamp="2020", original_url="http://e.com/",
                                 calendar_href="/web/*/http://e.com/"))
    assert [attrs["href"] for tag, attrs in parsed.tags if tag == "a"] == ["/web/*/http://e.com/"]


def test_hostile_values_are_escaped_and_the_banner_is_ascii() -> None:
    hostile = 'http://e.com/"><script>alert(1)</script>é'
    banner = render_banner(timestamp="2020", original_url=hostile, calendar_href=f"/web/*/{hostile}",
                           previous_href='/x"onmouseover="alert(1)')
    assert banner.isascii()
    parsed = parse(banner)
    assert [tag for tag, _ in parsed.tags] == ["div", "span", "span", "span", "a", "a"]
    assert hostile in "".join(parsed.text)
    assert parsed.tags[-2][1]["href"] == '/x"onmouseover="alert(1)'
    assert "onmouseover" not in parsed.tags[-2][1]


def test_no_external_resource_and_no_script() -> None:
    banner = render_banner(timestamp="2020", original_url="http://e.com/", calendar_href="/c",
                           previous_href="/p", next_href="/n")
    assert "<script" not in banner and "src=" not in banner and "url(" not in banner
    assert "http://" not in banner.replace("http://e.com/", "")


def test_the_banner_goes_into_a_page_after_its_body_tag() -> None:
    banner = render_banner(timestamp="20200102030405", original_url="http://e.com/",
                           calendar_href="/web/*/http://e.com/")
    rewriter = HtmlRewriter(ArchiveUrls(timestamp="20200102030405", page_url="http://e.com/"),
                            banner=banner)
    page = rewriter.feed(b"<html><head><title>t</title></head><body><p>x</p>") + rewriter.close()
    assert page == b"<html><head><title>t</title></head><body>" + banner.encode() + b"<p>x</p>"
