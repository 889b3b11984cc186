"""The one place that decides whether and how a replayed body is rewritten.

`id_` asks for the original bytes; bodies still in their Content-Encoding cannot be read;
everything else that is HTML or CSS goes through the rewriter of its kind, so the page's
links, images, stylesheets and scripts stay inside the archive at its time."""

from __future__ import annotations

from typing import Protocol


class BodyRewriter(Protocol):
    """A streaming rewriter: bytes in, bytes out, chunk boundaries anywhere."""

    def feed(self, data: bytes) -> bytes: ...

    def close(self) -> bytes: ...


def body_rewriter(*, content_type: str | None, modifier: str, timestamp: str, page_url: str,
                  banner: bool) -> BodyRewriter | None:
    """The rewriter for a body, or None to send it as stored."""
    del content_type, timestamp, page_url, banner
    if modifier == "id_":
        return None
    return None  # HTML and CSS are served as stored until the rewriters are wired in
