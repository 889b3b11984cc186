"""A page's <title>, read by link extraction in the same walk of the same parse."""

from __future__ import annotations

import pytest

from archive_testkit.testweb import page_path, render_page
from frontier_service.fetch import FetchResult, extract_links, links_from_fetch
from frontier_service.fetch.links import MAX_TITLE_CHARS
from tests.frontier_service.fetch.web import PLAIN, WEB

pytestmark = pytest.mark.unit


def title_of(html: str | bytes, charset: str | None = "utf-8") -> str | None:
    body = html.encode() if isinstance(html, str) else html
    return extract_links(body, "http://h.test/", charset=charset).title


@pytest.mark.parametrize(("html", "title"), [
    ("<html><head><title>Plain</title></head><body></body></html>", "Plain"),
    ("<title>\n  Two \t\r\n  lines\f </title>", "Two lines"),  # as document.title collapses
    ("<title>Fish &amp; chips &mdash; &#x41;</title>", "Fish & chips \u2014 A"),
    ("<title>Broken <b>title</title>", "Broken <b>title"),  # RCDATA: no tags inside a title
    ("<title>B\u00fccher \u00e0 la carte</title>", "B\u00fccher \u00e0 la carte"),
    ("<title>keep\u00a0no-break\u2003spaces</title>", "keep\u00a0no-break\u2003spaces"),
    ("<title>first</title><title>second</title>", "first"),
    ("<body><svg><title>a drawing</title></svg><title>late but real</title></body>",
     "late but real"),
    ("<html><head></head><body><p>no title</p></body></html>", None),
    ("<title></title>", None),
    ("<title> \n\t </title>", None),
    ("", None),
])
def test_the_title_is_the_documents_whitespace_collapsed(html: str, title: str | None) -> None:
    assert title_of(html) == title


def test_a_long_title_is_cut_to_the_limit_without_a_trailing_space() -> None:
    words = ("word " * 400).strip()  # 1,999 characters
    title = title_of(f"<title>{words}</title>")
    assert title is not None and len(title) <= MAX_TITLE_CHARS == 1_000
    assert words.startswith(title) and not title.endswith(" ")
    exact = "\u00e9" * 1_000 + "tail"  # characters count, not bytes
    assert title_of(f"<title>{exact}</title>") == "\u00e9" * 1_000


def test_the_title_follows_the_charset_as_the_links_do() -> None:
    latin1 = "<title>Caf\u00e9 cr\u00e8me</title>".encode("latin-1")
    assert title_of(latin1, charset="iso-8859-1") == "Caf\u00e9 cr\u00e8me"
    assert title_of(latin1, charset="utf-8") == "Caf\ufffd cr\ufffdme"  # a lying header
    meta = '<meta charset="windows-1252"><title>\u201cquoted\u201d</title>'.encode("cp1252")
    assert title_of(meta, charset=None) == "\u201cquoted\u201d"


def test_a_test_web_page_has_the_title_it_was_rendered_with() -> None:
    host = PLAIN[0]
    html = render_page(WEB, host, page_path(3)).decode()
    rendered = html.split("<title>", 1)[1].split("</title>", 1)[0]
    assert rendered and title_of(html) == rendered


def test_stylesheets_and_other_bodies_have_no_title() -> None:
    def fetched(body: bytes, content_type: str) -> FetchResult:
        return FetchResult(url="http://h.test/x", final_url="http://h.test/x", status=200,
                           body=body, content_type=content_type)

    css = links_from_fetch(fetched(b"/* <title>no</title> */ body{}", "text/css"))
    assert css is not None and css.title is None
    assert links_from_fetch(fetched(b"<title>not html</title>", "text/plain")) is None
    page = links_from_fetch(fetched(b"<title>yes</title>", "text/html"))
    assert page is not None and page.title == "yes"
