"""URLs in CSS: url() and @import forms, comments, strings, escapes, data: URLs, font
faces, image-set(), resolution against the stylesheet, charsets and the asset budget."""

from __future__ import annotations

import pytest

from frontier_service.fetch.css_links import css_references
from frontier_service.fetch.links import extract_stylesheet_links, links_from_fetch
from frontier_service.fetch.result import FetchResult
from frontier_service.frontier.frontier_record import ResourceType

R = ResourceType


@pytest.mark.unit
@pytest.mark.parametrize(("css", "urls"), [
    ("a{background:url(x.png)}", ["x.png"]),
    ("a{background:url( x.png )}", ["x.png"]),
    ("a{background:url('x.png')}", ["x.png"]),
    ('a{background:url( "x.png" )}', ["x.png"]),
    ("a{background:URL(x.png)}", ["x.png"]),
    ("a{background:url(x.png),url(y.png)}", ["x.png", "y.png"]),
    ("a{background:url()}", []),
    ('a{background:url("")}', []),
    ("a{background:url(a b.png)}", []),  # whitespace inside an unquoted url(): a bad URL
    ("a{background:url(a(b).png)}", []),  # so is an unescaped parenthesis
    ('a{background:url(a"b.png)}', []),  # and a quote
    ("a{background:myurl(x.png)}", []),  # another function
    ("a{background:src(x.png)}", []),  # src() takes only a string
    ('a{background:src("x.png")}', ["x.png"]),
])
def test_url_forms(css: str, urls: list[str]) -> None:
    assert [url for url, _ in css_references(css)] == urls


@pytest.mark.unit
@pytest.mark.parametrize("css", [
    '@import "t.css";', "@import 't.css';", "@import url(t.css);", '@import url("t.css");',
    "@IMPORT url( 't.css' ) screen and (min-width: 40em);", '@import "t.css" layer(base);',
    '@import url(t.css) supports(display: grid) print;', '@import/* c */"t.css";',
])
def test_import_forms(css: str) -> None:
    assert list(css_references(css)) == [("t.css", R.STYLESHEET)]


@pytest.mark.unit
def test_only_the_import_itself_is_a_stylesheet() -> None:
    css = '@import "a.css" supports(background: url(x.png)); b{background:url(b.png)}'
    assert list(css_references(css)) == [("a.css", R.STYLESHEET), ("b.png", R.IMAGE)]


@pytest.mark.unit
def test_comments_and_strings_hide_urls() -> None:
    css = ('/* a{background:url(in-comment.png)} @import "c.css"; */\n'
           'a::before{content:"url(in-string.png)"}\n'
           "b{content:'/* not a comment */';background:url(real.png)}\n"
           "c{background:url(/*part-of-the-url*/x.png)}\n"  # CSS: no comments inside url(
           "/* unterminated url(after.png)")
    assert [url for url, _ in css_references(css)] == ["real.png", "/*part-of-the-url*/x.png"]


@pytest.mark.unit
@pytest.mark.parametrize(("css", "url"), [
    (r"a{background:url(esc\61 ped.png)}", "escaped.png"),  # a hex escape eats one space
    (r"a{background:url(esc\000061ped.png)}", "escaped.png"),  # six digits, no space
    (r"a{background:url(a\(1\).png)}", "a(1).png"),
    (r"a{background:url(a\ b.png)}", "a b.png"),
    (r'a{background:url("q\"uote.png")}', 'q"uote.png'),
    (r"a{background:url('it\'s.png')}", "it's.png"),
    ('a{background:url("long\\\nline.png")}', "longline.png"),  # an escaped newline
    (r"a{background:url(bad\0 .png)}", "bad\ufffd.png"),  # NUL is no code point
    (r'a{background:url("trailing\\")}', "trailing\\"),  # an escaped backslash
])
def test_escapes(css: str, url: str) -> None:
    assert [found for found, _ in css_references(css)] == [url]


@pytest.mark.unit
def test_a_newline_cuts_a_string_and_the_stylesheets_end_closes_it() -> None:
    css = 'a{background:url("cut\nb{background:url(kept.png)} c{background:url("at-end.png'
    assert [url for url, _ in css_references(css)] == ["kept.png", "at-end.png"]


@pytest.mark.unit
@pytest.mark.parametrize("css", [
    "a{background:url(data:image/png;base64,iVBORw0KGgo=)}",
    "a{background:url('DATA:image/svg+xml;utf8,<svg/>')}",
    "@font-face{src:url( data:font/woff2;base64,d09GMg== )}",
])
def test_data_urls_are_skipped(css: str) -> None:
    assert list(css_references(css)) == []


@pytest.mark.unit
def test_font_faces_load_fonts_and_everything_else_images() -> None:
    css = """
    @font-face { font-family: A; src: url(a.woff2) format("woff2"), url('a.woff') format('woff'),
                 local("A Sans"); }
    @media print { @font-face { src: url(p.ttf) tech(variations) } .x { background: url(x.png) } }
    .y { background-image: image-set("y1.png" 1x, url(y2.png) 2x, "y.avif" type("image/avif")),
         -webkit-image-set('w.png' 1x); cursor: url(cursor.cur), auto; }
    li { list-style: url(bullet.svg) }
    """
    assert list(css_references(css)) == [
        ("a.woff2", R.FONT), ("a.woff", R.FONT), ("p.ttf", R.FONT), ("x.png", R.IMAGE),
        ("y1.png", R.IMAGE), ("y2.png", R.IMAGE), ("y.avif", R.IMAGE), ("w.png", R.IMAGE),
        ("cursor.cur", R.IMAGE), ("bullet.svg", R.IMAGE)]


@pytest.mark.unit
def test_urls_resolve_against_the_stylesheet_not_the_page() -> None:
    css = (b'@import "../base.css"; @font-face{src:url(/fonts/f.woff2)}'
           b".a{background:url(img/a.png)} .b{background:url(//cdn.test/b.png)}"
           b".c{background:url(https://other.test/c.png#frag)} .d{background:url(#svg-filter)}")
    links = extract_stylesheet_links(css, "http://site.test/static/css/main.css")
    assert links.pages == []
    assert list(zip(links.assets, links.asset_types, strict=True)) == [
        ("http://site.test/static/base.css", R.STYLESHEET),
        ("http://site.test/fonts/f.woff2", R.FONT),
        ("http://site.test/static/css/img/a.png", R.IMAGE),
        ("http://cdn.test/b.png", R.IMAGE),
        ("https://other.test/c.png", R.IMAGE),
        ("http://site.test/static/css/main.css", R.IMAGE),  # a fragment: the sheet itself
    ]


@pytest.mark.unit
@pytest.mark.parametrize(("body", "charset", "url"), [
    ("a{background:url(caf\u00e9.png)}".encode("latin-1"), "iso-8859-1", "caf\u00e9.png"),
    ('@charset "iso-8859-1"; a{background:url(caf\u00e9.png)}'.encode("latin-1"), None,
     "caf\u00e9.png"),
    ("\ufeffa{background:url(caf\u00e9.png)}".encode("utf-16-le"), "iso-8859-1", "caf\u00e9.png"),
    ("a{background:url(caf\u00e9.png)}".encode(), None, "caf\u00e9.png"),
    (b"a{background:url(caf\xff.png)}", None, "caf\ufffd.png"),  # bad UTF-8 never raises
])
def test_stylesheet_charsets(body: bytes, charset: str | None, url: str) -> None:
    links = extract_stylesheet_links(body, "http://site.test/s.css", charset=charset)
    assert links.assets == [f"http://site.test/{url}"]


@pytest.mark.unit
def test_a_huge_stylesheet_is_cut_at_the_budget_and_the_rest_counted() -> None:
    rules = "".join(f".r{n}{{background:url(img/{n}.png)}}.q{n}{{background:url(img/{n}.png)}}"
                    for n in range(50_000))
    links = extract_stylesheet_links(rules.encode(), "http://site.test/s.css", max_assets=200)
    assert links.assets == [f"http://site.test/img/{n}.png" for n in range(200)]
    assert links.assets_over_budget == 50_000 - 200  # each repeated reference counted once


def _fetched(content_type: str | None, body: bytes = b"a{background:url(x.png)}") -> FetchResult:
    return FetchResult(url="http://site.test/s", final_url="http://site.test/s", status=200,
                       body=body, content_type=content_type)


@pytest.mark.unit
@pytest.mark.parametrize(("content_type", "kind", "parsed"), [
    ("text/css", R.DOCUMENT, True),  # a stylesheet however it was reached
    ("text/css", R.IMAGE, True),
    ("text/plain", R.STYLESHEET, True),  # a misconfigured server: read as the browser asked
    (None, R.STYLESHEET, True),
    ("application/octet-stream", R.STYLESHEET, True),
    ("text/plain", R.DOCUMENT, False),
    ("image/png", R.STYLESHEET, False),
    ("application/json", R.STYLESHEET, False),
])
def test_which_fetches_are_read_as_css(content_type: str | None, kind: ResourceType,
                                       parsed: bool) -> None:
    links = links_from_fetch(_fetched(content_type), kind=kind)
    assert (links is not None and links.assets == ["http://site.test/x.png"]) is parsed
