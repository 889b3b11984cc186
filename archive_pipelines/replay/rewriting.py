"""The one place that decides whether and how a replayed body is rewritten.

HTML (`text/html`, `application/xhtml+xml`) goes through `HtmlRewriter` and CSS (`text/css`,
or any text asked for as a stylesheet with `cs_`) through `CssRewriter`, so the page's links,
images, stylesheets and scripts stay inside the archive at its time. Sent as stored: `id_`
(the original bytes), scripts, images and everything else, and bodies still in their
Content-Encoding (they cannot be read). The banner goes into HTML pages only, not into
frames (`if_`, `fr_`) nor when it is switched off.
"""

from __future__ import annotations

from typing import Protocol

from archive_pipelines.replay.archive_urls import ArchiveUrls
from archive_pipelines.replay.rewrite_css import CssRewriter
from archive_pipelines.replay.rewrite_html import HtmlRewriter

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_FRAMES = frozenset({"if_", "fr_"})


class BodyRewriter(Protocol):
    """A streaming rewriter: bytes in, bytes out, chunk boundaries anywhere."""

    def feed(self, data: bytes) -> bytes: ...

    def close(self) -> bytes: ...


def media_type(content_type: str | None) -> str:
    """`text/html` of `text/html; charset=utf-8`."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def body_rewriter(*, content_type: str | None, modifier: str, timestamp: str, page_url: str,
                  banner: str | None) -> BodyRewriter | None:
    """The rewriter for a body, or None to send it as stored. `banner`: its HTML, or None."""
    if modifier == "id_":
        return None
    kind = media_type(content_type)
    if kind in _HTML_TYPES:
        urls = ArchiveUrls(timestamp=timestamp, page_url=page_url)
        return HtmlRewriter(urls, banner=None if modifier in _FRAMES else banner,
                            xhtml=kind == "application/xhtml+xml")
    if kind == "text/css" or (modifier == "cs_" and kind.startswith("text/")):
        return CssRewriter(ArchiveUrls(timestamp=timestamp, page_url=page_url))
    return None
