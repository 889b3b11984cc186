"""Archive URLs: every form of URL a page writes, resolved as a browser would, into the archive."""

from __future__ import annotations

from urllib.parse import urljoin

import pytest

from archive_pipelines.replay.archive_urls import ArchiveUrlError, ArchiveUrls

pytestmark = pytest.mark.unit

PAGE = "http://example.com/dir/page.html?q=1"
TS = "20200102030405"


def urls(**changes: str) -> ArchiveUrls:
    return ArchiveUrls(timestamp=changes.get("timestamp", TS),
                       page_url=changes.get("page_url", PAGE),
                       prefix=changes.get("prefix", "/web/"))


@pytest.mark.parametrize(("url", "target"), [
    ("img.png", "http://example.com/dir/img.png"),
    ("./img.png", "http://example.com/dir/img.png"),
    ("../up/img.png", "http://example.com/up/img.png"),
    ("../../../../x", "http://example.com/x"),
    ("/root.css", "http://example.com/root.css"),
    ("//cdn.example.org/lib.js", "http://cdn.example.org/lib.js"),
    ("https://secure.example.org/a?b=c#d", "https://secure.example.org/a?b=c#d"),
    ("HTTP://Example.ORG/Case", "http://Example.ORG/Case"),
    ("?page=2", "http://example.com/dir/page.html?page=2"),
    ("other.html#part", "http://example.com/dir/other.html#part"),
    ("  spaced.html \n", "http://example.com/dir/spaced.html"),
    ("li\nne\t.html", "http://example.com/dir/line.html"),
    ("\\\\evil.example\\x", "http://evil.example/x"),  # a browser reads `\` as `/`
    ("/a\\b", "http://example.com/a/b"),
    ("http:same-scheme.html", "http://example.com/dir/same-scheme.html"),
    ("https:other-host/x", "https://other-host/x"),
    ("caf\xc3\xa9.html", "http://example.com/dir/caf\xc3\xa9.html"),  # bytes as latin-1 kept
])
def test_a_url_is_resolved_against_the_page_and_put_in_the_archive(url: str, target: str) -> None:
    assert urls().rewrite(url) == f"/web/{TS}/{target}"


@pytest.mark.parametrize("url", [
    "", "   ", "#top", "#", "data:image/png;base64,AAAA", "blob:http://example.com/uuid",
    "javascript:alert(1)", "JavaScript:void(0)", "mailto:someone@example.com", "about:blank",
    "tel:+123", "ftp://example.com/file", "ws://example.com/socket",
])
def test_what_is_no_http_url_is_left_alone(url: str) -> None:
    assert urls().rewrite(url) == url
    assert urls().rewrite(url, modifier="im_") == url


def test_a_script_url_hidden_by_tabs_and_newlines_is_still_left_alone() -> None:
    assert urls().rewrite("java\nscript:alert(1)") == "java\nscript:alert(1)"
    assert urls().rewrite(" \x01javascript:x") == " \x01javascript:x"


@pytest.mark.parametrize("modifier", ["im_", "js_", "cs_", "if_", "fr_", "oe_", "id_", "mp_", ""])
def test_the_modifier_follows_the_timestamp(modifier: str) -> None:
    assert urls().rewrite("/x.png", modifier=modifier) == f"/web/{TS}{modifier}/http://example.com/x.png"


def test_an_unknown_modifier_is_refused() -> None:
    with pytest.raises(ArchiveUrlError, match="unknown modifier"):
        urls().rewrite("/x", modifier="xx")
    with pytest.raises(ArchiveUrlError, match="unknown modifier"):
        urls().archive_url("http://example.com/", modifier="../")


def test_a_base_changes_what_relative_urls_resolve_against() -> None:
    based = urls().with_base("https://static.example.net/assets/")
    assert based.rewrite("a.png") == f"/web/{TS}/https://static.example.net/assets/a.png"
    assert based.rewrite("/b.png") == f"/web/{TS}/https://static.example.net/b.png"
    assert based.page_url == PAGE
    relative_base = urls().with_base("../other/")
    assert relative_base.base == "http://example.com/other/"
    assert relative_base.rewrite("c") == f"/web/{TS}/http://example.com/other/c"


def test_a_base_that_is_no_http_url_changes_nothing() -> None:
    original = urls()
    assert original.with_base("javascript:alert(1)") is original
    assert original.with_base("") is original


def test_an_absolute_prefix_is_kept() -> None:
    absolute = urls(prefix="http://127.0.0.1:8080/web/")
    assert absolute.rewrite("/x") == f"http://127.0.0.1:8080/web/{TS}/http://example.com/x"


@pytest.mark.parametrize("timestamp", ["", "1" * 15, "2020-01-01", "20200101T", "١٢٣"])
def test_a_bad_timestamp_is_refused(timestamp: str) -> None:
    with pytest.raises(ArchiveUrlError, match="timestamp"):
        urls(timestamp=timestamp)


@pytest.mark.parametrize("page_url", ["", "/relative", "example.com/x", "ftp://example.com/",
                                      "http://", "javascript:alert(1)"])
def test_a_page_url_that_is_no_absolute_http_url_is_refused(page_url: str) -> None:
    with pytest.raises(ArchiveUrlError, match="absolute http"):
        urls(page_url=page_url)


def test_a_non_ascii_page_url_is_percent_encoded() -> None:
    assert urls(page_url="http://example.com/café/").base == "http://example.com/caf%C3%A9/"


def test_a_malformed_authority_is_left_alone_not_an_error() -> None:
    assert urls().rewrite("//[broken/x") == "//[broken/x"


@pytest.mark.parametrize("url", [
    "a/b/../c", "./x/./y", "/p/q/../../r", "?x", "../a?b#c", "x;y", "//h/p/../q", "g?y/./x",
    "..", ".", "/", "", "g;x=1/../y",
])
def test_resolution_agrees_with_rfc_3986(url: str) -> None:
    expected = urljoin(PAGE, url) if url else None
    assert urls().resolve(url) == expected


@pytest.mark.parametrize("base", [
    PAGE, "http://example.com", "http://example.com/", "https://h.example/a/b/c?x=/y/z#f/g",
    "http://h.example/a/b/",
    "http://h.example:8080/p#frag", "http://user@h.example/a/", "http://h.example?q=/a",
])
@pytest.mark.parametrize("url", [
    "x", "x/y", "/x", "/x/y?z", "//other.example/p", "x?q", "x#f", "x:y", "é", "a@b", "/a@b",
    "y.png", "/.well-known/x", ".hidden", "a/.b", "...", "x/..", "?q", "#f", ";p",
    "./x", "../x", "../../x", "../../../../../x", "./../x", ".././x", "../", "..", ".", "./",
    "../..", "../.x", "../x/../y", "../x?a=/./b", "../x#../y", ".//x", "..//x",
])
def test_the_joins_without_urljoin_agree_with_it(base: str, url: str) -> None:
    expected = urljoin(base, url)
    if not url or url.startswith("#") or url.startswith("x:"):
        return  # left alone before any join
    assert urls().with_base(base).resolve(url) == expected


@pytest.mark.parametrize(("base", "url", "target"), [
    # empty path segments are kept, as browsers keep them (urljoin drops them)
    ("http://h.example/a//b/c", "x", "http://h.example/a//b/x"),
    ("http://h.example/a//b/c", "../x", "http://h.example/a//x"),
    ("http://h.example/a//b/c", "../../x", "http://h.example/a/x"),
    ("http://h.example//", "x", "http://h.example//x"),
])
def test_empty_path_segments_are_kept_as_browsers_keep_them(base: str, url: str, target: str) -> None:
    assert urls().with_base(base).resolve(url) == target
