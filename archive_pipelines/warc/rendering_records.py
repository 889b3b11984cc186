"""A browser page load's full-page screenshot and rendered DOM as WARC `resource` records.

Named as Browsertrix names the resources it writes beside a page (`urn:<type>:<page URL>`):
the full-page PNG is `urn:fullPage:<url>`, Browsertrix's name for a full-page screenshot
(its `urn:view:` is a screenshot of the viewport only, which ours is not); the rendered DOM,
which Browsertrix does not store, is `urn:dom:<url>` on the same pattern. The record's
`Content-Type` is the body's (`image/png`, `text/html; charset=utf-8`), its block the bytes
as stored, `WARC-Payload-Digest` their sha256. Being no http(s) URL, they answer no replay
of the page's URL, here or in pywb and ReplayWeb.page, and an import keeps them in the
stored WARC only.
"""

from __future__ import annotations

RENDERING_URNS = {"screenshot": "fullPage", "dom": "dom"}


def rendering_uri(kind: str, url: str) -> str:
    """The WARC-Target-URI of a page's `screenshot` or `dom` capture."""
    return f"urn:{RENDERING_URNS[kind]}:{url}"
