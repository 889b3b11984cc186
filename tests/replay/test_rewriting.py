"""Which bodies are rewritten, and how: the one decision replay makes per body."""

from __future__ import annotations

import pytest

from archive_pipelines.replay.rewrite_css import CssRewriter
from archive_pipelines.replay.rewrite_html import HtmlRewriter
from archive_pipelines.replay.rewriting import body_rewriter

pytestmark = pytest.mark.unit

PAGE = "http://example.test/a/page.html"


@pytest.mark.parametrize(("content_type", "modifier", "kind"), [
    ("text/html; charset=utf-8", "", HtmlRewriter),
    ("TEXT/HTML", "mp_", HtmlRewriter),
    ("application/xhtml+xml", "", HtmlRewriter),
    ("text/css", "", CssRewriter),
    ("text/plain", "cs_", CssRewriter),  # a stylesheet served as text, asked for as one
    ("text/plain", "", type(None)),
    ("text/html", "id_", type(None)),  # the original bytes
    ("text/css", "id_", type(None)),
    ("application/javascript", "js_", type(None)),
    ("image/png", "im_", type(None)),
    (None, "", type(None)),
])
def test_what_is_rewritten(content_type: str | None, modifier: str, kind: type) -> None:
    found = body_rewriter(content_type=content_type, modifier=modifier,
                          timestamp="20261127000000", page_url=PAGE, banner="<b>banner</b>")
    assert type(found) is kind


@pytest.mark.parametrize(("modifier", "banner"), [("", True), ("if_", False), ("fr_", False)])
def test_frames_get_no_banner(modifier: str, banner: bool) -> None:
    rewriter = body_rewriter(content_type="text/html", modifier=modifier,
                             timestamp="20261127000000", page_url=PAGE, banner="<b>banner</b>")
    assert rewriter is not None
    out = rewriter.feed(b"<html><body><img src=x.png></body></html>") + rewriter.close()
    assert (b"<b>banner</b>" in out) is banner
    assert b'src="/web/20261127000000im_/http://example.test/a/x.png"' in out or \
        b"src=/web/20261127000000im_/http://example.test/a/x.png" in out


def test_xhtml_is_read_as_xhtml() -> None:
    rewriter = body_rewriter(content_type="application/xhtml+xml", modifier="",
                             timestamp="20261127000000", page_url=PAGE, banner=None)
    assert rewriter is not None
    page = b'<html><body><script src="a.js"/><img src="b.png"/></body></html>'
    out = rewriter.feed(page) + rewriter.close()
    assert b"/web/20261127000000im_/http://example.test/a/b.png" in out  # not swallowed
