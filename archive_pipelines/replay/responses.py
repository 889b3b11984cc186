"""The headers of a replayed response: the capture's own, with what would act on the
browser today neutralised, and ours added; and `Range` requests.

Kept as they were: the content type and the headers that describe the content (language,
disposition, Last-Modified, ETag, Link ...). Renamed to `X-Archive-Orig-<Name>`, so they are
still there to read but do nothing: cookies (`Set-Cookie`), HSTS, the original CSP, and the
rest listed in `_NEUTRALISED`. Dropped: hop-by-hop and framing headers (the body is stored
decoded and sent by this server, which frames it itself), and the original
`Content-Length` / `Content-Encoding` (kept as `X-Archive-Orig-*` too).

Our `Content-Security-Policy` lets a replayed page load from the replay server only (plus
inline code, `data:` and `blob:`, which pages need and which reach no network), so a page
that escapes the URL rewriting fails to load rather than reaching the live web.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

ORIGINAL_PREFIX = "X-Archive-Orig-"
REPLAY_CSP = ("default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:; "
              "connect-src 'self' data: blob:; form-action 'self'; "
              "frame-ancestors 'self'; base-uri 'self'")
_NEUTRALISED = frozenset({
    "set-cookie", "set-cookie2", "strict-transport-security", "content-security-policy",
    "content-security-policy-report-only", "public-key-pins", "public-key-pins-report-only",
    "expect-ct", "report-to", "nel", "alt-svc", "clear-site-data", "service-worker-allowed",
    "refresh", "location", "content-length", "content-encoding", "x-frame-options",
    "access-control-allow-origin", "access-control-allow-credentials", "cache-control",
    "expires", "pragma", "age", "date", "server", "vary", "www-authenticate",
    "permissions-policy", "feature-policy", "cross-origin-opener-policy",
    "cross-origin-embedder-policy", "cross-origin-resource-policy", "origin-agent-cluster",
    "accept-ranges", "content-range", "etag", "last-modified",
})
_DROPPED = frozenset({
    "transfer-encoding", "connection", "keep-alive", "proxy-connection", "te", "trailer",
    "upgrade", "proxy-authenticate", "content-type", "memento-datetime", "link",
    "content-location",
})
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")
_MAX_HEADERS = 200
_MAX_VALUE = 8192


def replay_headers(original: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The capture's headers as a replay sends them (content type and Link excluded: the
    caller sets those)."""
    out: list[tuple[str, str]] = []
    for name, value in list(original)[:_MAX_HEADERS]:
        lowered = name.lower()
        if not _TOKEN.match(name) or "\r" in value or "\n" in value or len(value) > _MAX_VALUE:
            continue
        if lowered in _DROPPED:
            if lowered in ("link", "content-location"):
                out.append((ORIGINAL_PREFIX + name, value))
            continue
        if lowered in _NEUTRALISED:
            out.append((ORIGINAL_PREFIX + name, value))
        else:
            out.append((name, value))
    return out


@dataclass(frozen=True)
class ByteRange:
    """Bytes `start` to `end` inclusive of a body of `size` bytes."""

    start: int
    end: int
    size: int

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    def content_range(self) -> str:
        return f"bytes {self.start}-{self.end}/{self.size}"


class Unsatisfiable(ValueError):
    """A Range none of whose bytes the body has: 416."""


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The one byte range a `Range` header asks of a body of `size` bytes; None to send it
    whole (no header, a syntax we ignore as RFC 9110 allows, or several ranges);
    Unsatisfiable when it starts past the end."""
    if not header:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    if not dash or not (first.isdigit() or last.isdigit()) or \
            (first and not first.isdigit()) or (last and not last.isdigit()):
        return None
    if not first:  # the last N bytes
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise Unsatisfiable(header)
        return ByteRange(max(size - suffix, 0), size - 1, size)
    start = int(first)
    end = int(last) if last else size - 1
    if last and end < start:
        return None
    if start >= size:
        raise Unsatisfiable(header)
    return ByteRange(start, min(end, size - 1), size)
