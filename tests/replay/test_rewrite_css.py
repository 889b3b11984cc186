"""The streaming CSS rewriter: url(), @import and image-set() into the archive, every other
byte kept, whatever the chunk boundaries."""

from __future__ import annotations

import random

import pytest

from archive_pipelines.replay.archive_urls import ArchiveUrls
from archive_pipelines.replay.rewrite_css import CssRewriter, rewrite_css_text
from tests.helpers.rewriting import fed_in_pieces, same_at_every_boundary

pytestmark = pytest.mark.unit

TS = "20200102030405"
URLS = ArchiveUrls(timestamp=TS, page_url="http://example.com/css/site.css")
IM = f"/web/{TS}im_/http://example.com/css"
CS = f"/web/{TS}cs_/http://example.com/css"


def rewrite(css: bytes, *, cuts: list[int] | None = None, max_pending: int = 1 << 20) -> bytes:
    return fed_in_pieces(CssRewriter(URLS, max_pending=max_pending), css, cuts)


def assert_same_at_every_boundary(css: bytes, *, max_pending: int = 1 << 20) -> bytes:
    return same_at_every_boundary(lambda: CssRewriter(URLS, max_pending=max_pending), css)


@pytest.mark.parametrize(("css", "expected"), [
    ("a{background:url(b.png)}", f"a{{background:url({IM}/b.png)}}"),
    ("a{background:url( b.png )}", f"a{{background:url( {IM}/b.png )}}"),
    ('a{background:url("b.png")}', f'a{{background:url("{IM}/b.png")}}'),
    ("a{background:url( 'b.png' )}", f"a{{background:url( '{IM}/b.png' )}}"),
    ("a{background:URL(/root.png)}", f"a{{background:URL(/web/{TS}im_/http://example.com/root.png)}}"),
    ("a{b:url(//cdn.org/x.png)}", f"a{{b:url(/web/{TS}im_/http://cdn.org/x.png)}}"),
    ('@import "x.css";', f'@import "{CS}/x.css";'),
    ("@import 'x.css' screen;", f"@import '{CS}/x.css' screen;"),
    ("@import url(x.css);", f"@import url({CS}/x.css);"),
    ('@IMPORT url("x.css") layer(a);', f'@IMPORT url("{CS}/x.css") layer(a);'),
    ('@import "a.css"; a{content:"b.css"}', f'@import "{CS}/a.css"; a{{content:"b.css"}}'),
    ('a{b:image-set("a.png" 1x, url(b.png) 2x, "c.png" type("image/png") 3x)}',
     f'a{{b:image-set("{IM}/a.png" 1x, url({IM}/b.png) 2x, "{IM}/c.png" type("image/png") 3x)}}'),
    ('a{b:-webkit-image-set(url("a.png") 1x, "b.png" 2x)}',
     f'a{{b:-webkit-image-set(url("{IM}/a.png") 1x, "{IM}/b.png" 2x)}}'),
    ("@font-face{src:url(f.woff2) format('woff2')}", f"@font-face{{src:url({IM}/f.woff2) format('woff2')}}"),
    ('a{b:url("cut by the end', f'a{{b:url("{IM}/cut by the end'),  # the end closes it, as in CSS
])
def test_urls_point_into_the_archive(css: str, expected: str) -> None:
    assert rewrite_css_text(css, URLS) == expected
    assert assert_same_at_every_boundary(css.encode()) == expected.encode()


@pytest.mark.parametrize("css", [
    "a{b:url(data:image/png;base64,AAAA)}",
    'a{b:url("DATA:image/svg+xml,<svg/>")}',
    "/* url(no.png) @import 'no.css'; */",
    'a{content:"url(no.png)"}',
    "a{content:'@import \"no.css\"'}",
    "a{b:xurl(no.png)}",
    "a{b:my-url(no.png)}",
    "a{b:url(#frag)}",
    "a{b:url()}",
    'a{b:url("")}',
    "a{b:url(a\"b)}",  # a bad URL: left as it is
    "a{b:url(a b)}",
    "a{b:url(javascript:x)}",
    "a{b:url(",
    "/* unclosed comment url(x)",
    "",
])
def test_what_is_no_url_is_kept(css: str) -> None:
    assert rewrite_css_text(css, URLS) == css
    assert assert_same_at_every_boundary(css.encode()) == css.encode()


@pytest.mark.parametrize(("css", "expected"), [
    (r"a{b:url(a\)b.png)}", f"a{{b:url({IM}/a\\)b.png)}}"),
    (r"a{b:url(\61.png)}", f"a{{b:url({IM}/a.png)}}"),
    (r'a{b:url("a\"b.png")}', f'a{{b:url("{IM}/a\\"b.png")}}'),
    ('a{b:url("a b.png")}', f'a{{b:url("{IM}/a b.png")}}'),
    (r"a{b:url(\41 b.png)}", f"a{{b:url({IM}/Ab.png)}}"),  # the space ends the escape
    # a non-ASCII escape stays an escape: its bytes would depend on the charset
    (r"a{b:url(caf\e9 .png)}", f"a{{b:url({IM}/caf\\0000e9.png)}}"),
    (r"a{b:url(\0)}", f"a{{b:url({IM}/\\00fffd)}}"),
])
def test_escapes_are_read_and_written_back(css: str, expected: str) -> None:
    assert rewrite_css_text(css, URLS) == expected


def test_a_string_cut_by_a_newline_is_no_url() -> None:
    css = '@import "x.css\n; a{b:url(c.png)}'
    assert rewrite_css_text(css, URLS) == f'@import "x.css\n; a{{b:url({IM}/c.png)}}'


@pytest.mark.parametrize("charset", ["latin-1", "utf-8", "shift_jis", "gb18030"])
def test_bytes_of_any_ascii_compatible_charset_are_kept(charset: str) -> None:
    css = 'a::after{content:"日本 é ✓"} b{background:url(é.png)}'.encode(charset, "xmlcharrefreplace")
    name = "é.png".encode(charset, "xmlcharrefreplace")
    assert rewrite(css) == css.replace(b"url(" + name, f"url({IM}/".encode() + name)


def test_a_long_data_url_streams_through_without_being_held() -> None:
    payload = b"A" * 500_000
    css = b"a{b:url(data:image/png;base64," + payload + b")} c{d:url(x.png)}"
    rewriter = CssRewriter(URLS, max_pending=1000)
    first = rewriter.feed(css[:200_000])
    assert len(first) >= 199_000  # passed on as it came
    rest = rewriter.feed(css[200_000:]) + rewriter.close()
    assert first + rest == css.replace(b"url(x.png)", f"url({IM}/x.png)".encode())


def test_a_url_longer_than_the_limit_is_passed_on_unrewritten() -> None:
    css = b"a{b:url(" + b"p" * 5000 + b".png)} c{d:url(x.png)}"
    out = rewrite(css, cuts=list(range(0, len(css), 100)), max_pending=1000)
    assert out == css.replace(b"url(x.png)", f"url({IM}/x.png)".encode())
    assert rewrite(css, max_pending=1000).startswith(f"a{{b:url({IM}/pppp".encode())


@pytest.mark.parametrize("css", [
    b'@import "a.css" screen; @import url(b.css);\na{background:url( "i.png" ) no-repeat}',
    b"/* c */ a{b:image-set('x.png' 1x,url(y.png) 2x)} /* url(z) */ c{d:url(q\\).png)}",
    b"a{content:'it\\'s url(no)'} b{c:url(data:x)} d{e:URL( e.png )}",
])
def test_every_chunk_boundary_gives_the_same_output(css: bytes) -> None:
    assert_same_at_every_boundary(css)


def test_random_css_soup_is_the_same_at_every_boundary() -> None:
    pieces = [b"url(", b")", b"(", b'"', b"'", b"/*", b"*/", b"@import", b" ", b";", b"{", b"}",
              b"x.png", b"\\", b"\n", b"data:", b"image-set(", b"a", b"-", b"/", b"\xe9"]
    generator = random.Random(30)
    for _ in range(80):
        css = b"".join(generator.choice(pieces) for _ in range(generator.randint(1, 25)))
        assert_same_at_every_boundary(css)
