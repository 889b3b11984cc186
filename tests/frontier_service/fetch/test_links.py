"""Link extraction: the test web's own link lists, awkward HTML, charsets, non-HTML bodies."""

from __future__ import annotations

import asyncio

import pytest

from archive_testkit.testweb import TestWeb, absolute_links, page_path, render_page
from archive_testkit.testweb.assets import SHARED_ASSETS
from frontier_service.fetch import FetchResult, extract_links, links_from_fetch, resolve_link
from tests.frontier_service.fetch.web import PLAIN, SPECIAL, WEB, make_fetcher

SAMPLE = [(host, page_path(n)) for host in (*PLAIN[:3], SPECIAL) for n in (0, 7, 23)]


@pytest.mark.unit
@pytest.mark.parametrize(("host", "path"), SAMPLE)
def test_page_links_match_the_test_web(host: str, path: str) -> None:
    links = extract_links(render_page(WEB, host, path), f"http://{host}{path}", charset="utf-8")
    assert links.pages == list(dict.fromkeys(absolute_links(WEB, host, path)))
    assert links.assets == [f"http://{host}{asset}" for asset in _asset_order()]


def _asset_order() -> list[str]:
    """The shared assets in the order an ordinary page's <head> and <header> name them."""
    order = ["/static/site.css", "/static/font.woff2", "/static/app.js", "/img/logo.png"]
    assert set(order) == set(SHARED_ASSETS)
    return order


def fetch_all(port: int, urls: list[str]) -> list[FetchResult]:
    async def main() -> list[FetchResult]:
        async with make_fetcher(port) as fetcher:
            return [await fetcher.fetch(url) for url in urls]

    return asyncio.run(main())


def test_links_of_fetched_pages_and_only_of_html(web: TestWeb) -> None:
    base = f"http://{SPECIAL}"
    page, redirected, pdf, png, data = fetch_all(
        web.port,
        [
            f"{base}/s3/p13.html",
            f"{base}/redirect/3",
            f"{base}/doc/report-0.pdf",
            f"{base}/img/photo-1.png",
            f"{base}/api/item-2.json",
        ],
    )
    links = links_from_fetch(page)
    assert links is not None and links.pages == list(
        dict.fromkeys(absolute_links(WEB, SPECIAL, "/s3/p13.html"))
    )
    after_redirects = links_from_fetch(redirected)  # resolved against the final URL
    assert after_redirects is not None
    assert after_redirects.pages == list(dict.fromkeys(absolute_links(WEB, SPECIAL, "/")))
    assert [links_from_fetch(r) for r in (pdf, png, data)] == [None, None, None]


def test_malformed_html_still_yields_its_links(web: TestWeb) -> None:
    (result,) = fetch_all(web.port, [f"http://{SPECIAL}/malformed/page.html"])
    links = links_from_fetch(result)
    assert links is not None
    base = f"http://{SPECIAL}"
    # Unquoted, single-quoted and unterminated-tag hrefs count; everything after the
    # unterminated "<!--" is a comment, as in a browser.
    assert links.pages == [f"{base}/s2/p2.html", f"{base}/s3/p3.html", f"{base}/s4/p4.html"]


def test_page_that_lies_about_its_encoding(web: TestWeb) -> None:
    (result,) = fetch_all(web.port, [f"http://{SPECIAL}/enc/latin1.html"])
    assert result.charset == "utf-8" and result.body is not None
    with pytest.raises(UnicodeDecodeError):
        result.body.decode("utf-8")
    links = links_from_fetch(result)
    assert links is not None and links.pages == [f"http://{SPECIAL}/s1/p1.html", f"http://{SPECIAL}/"]


@pytest.mark.unit
@pytest.mark.parametrize(
    "charset", [None, "utf-8", "latin-1", "no-such-charset", "base64", "rot13", "utf-16"]
)
@pytest.mark.parametrize(
    "body",
    [
        b"\xff\xfe\x00\x01<a href='/x'>\xc3\x28</a>",
        b"<a href='/x'>\x80\x81\xfe\xff</a><a href=\x00>",
        b"",
        b"\x00" * 100,
        b"<<<<a a a a href=>>>",
    ],
)
def test_undecodable_bytes_never_raise(body: bytes, charset: str | None) -> None:
    links = extract_links(body, "http://a.test/dir/page.html", charset=charset)
    assert all(link.startswith("http://a.test/") for link in links.pages)


@pytest.mark.unit
def test_meta_charset_is_honoured_without_a_header() -> None:
    body = '<meta charset="windows-1251"><a href="/\u043f">\u043f</a>'.encode("windows-1251")
    links = extract_links(body, "http://a.test/")
    assert links.pages == ["http://a.test/\u043f"]


@pytest.mark.unit
def test_base_href_tags_and_kinds() -> None:
    html = b"""<html><head><base href="http://cdn.test/root/">
    <link rel="stylesheet" href="css/a.css"><link rel="canonical" href="/canon">
    <link rel="dns-prefetch" href="//dns.test"><link rel="icon" href="favicon.ico">
    <script src="js/app.js"></script></head><body>
    <a href="page#frag">x</a><a href="page">dup</a><a href="#top">top</a>
    <a href="mailto:x@y.test">m</a><a href="javascript:void(0)">j</a><a href="ftp://f.test/x">f</a>
    <a>no href</a><a href="">empty</a><area href="/map"><iframe src="frame.html"></iframe>
    <img src="i.png"><img src="data:image/png;base64,AAAA"><a href="HTTPS://Other.Test/Up">o</a>
    </body></html>"""
    links = extract_links(html, "http://site.test/a/b.html")
    assert links.base_url == "http://cdn.test/root/"
    assert links.pages == [
        "http://cdn.test/canon",
        "http://cdn.test/root/page",
        "http://cdn.test/root/",  # "#top": the base itself; the empty href is dropped
        "http://cdn.test/map",
        "http://cdn.test/root/frame.html",
        "https://Other.Test/Up",
    ]
    assert links.assets == [
        "http://cdn.test/root/css/a.css",
        "http://cdn.test/root/favicon.ico",
        "http://cdn.test/root/js/app.js",
        "http://cdn.test/root/i.png",
    ]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("  /a  ", "http://h.test/a"),
        ("/s1/\np1.html", "http://h.test/s1/p1.html"),  # raw newline removed (WHATWG)
        ("/a\tb", "http://h.test/ab"),
        ("//other.test/x#y", "http://other.test/x"),
        ("?q=1", "http://h.test/dir/p.html?q=1"),
        ("http://[::1", None),  # unparsable
        ("tel:+1555", None),
        ("https:///nohost", None),  # no host
        ("", None),
        (None, None),
    ],
)
def test_resolve_link(href: str | None, expected: str | None) -> None:
    assert resolve_link("http://h.test/dir/p.html", href) == expected
