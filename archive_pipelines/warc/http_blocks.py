"""The HTTP part of exported records: request and response headers that describe the
payload the record carries.

The store keeps bodies decoded (the crawler removes Content-Encoding): that is what
deduplicates across servers and what replay serves. So a response's headers are rewritten to
agree with the stored bytes: no `Content-Encoding` over plain bytes, no `Transfer-Encoding`,
a `Content-Length` equal to the payload; each original value is kept under
`X-Original-<Name>` (`X-Original-Content-Encoding: gzip`). A body the crawler could not
decode is stored as it came, and keeps its `Content-Encoding`. Redirect hops whose own headers
the crawler did not keep get a status line and `Location` only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from http import HTTPStatus
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders

ORIGINAL_PREFIX = "X-Original-"
_REWRITTEN = ("content-encoding", "transfer-encoding", "content-length")
_MAX_HEADERS = 1_000
_BREAKS = re.compile(r"[\r\n]")


def reason(status: int) -> str:
    """The standard reason phrase of a status ("Unknown" for one the RFCs do not name)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _pairs(headers: object) -> list[tuple[str, str]]:
    """The [name, value] pairs of a record, those that are pairs of strings without line
    breaks (a header that could break the block is left out)."""
    if not isinstance(headers, list):
        return []
    pairs = []
    for pair in headers[:_MAX_HEADERS]:
        try:
            name, value = pair
        except (TypeError, ValueError):
            continue
        if (type(name) is str and type(value) is str and name.strip()
                and not _BREAKS.search(name) and not _BREAKS.search(value)):
            pairs.append((name, value))
    return pairs


def response_block(status: int, headers: object, *, payload_size: int,
                   still_encoded: bool = False) -> StatusAndHeaders:
    """The response's status line and headers for a payload of `payload_size` stored
    bytes (`still_encoded`: the body kept its Content-Encoding)."""
    kept: list[tuple[str, str]] = []
    originals: list[tuple[str, str]] = []
    for name, value in _pairs(headers):
        lowered = name.lower()
        if lowered == "content-length" and value.strip() == str(payload_size):
            continue  # it already describes the payload (a WARC of ours, imported)
        if lowered in _REWRITTEN and not (still_encoded and lowered == "content-encoding"):
            originals.append((ORIGINAL_PREFIX + name, value))
        else:
            kept.append((name, value))
    kept.extend(originals)
    kept.append(("Content-Length", str(payload_size)))
    return StatusAndHeaders(f"{status} {reason(status)}", kept, protocol="HTTP/1.1")


def redirect_block(status: int, location: str | None) -> StatusAndHeaders:
    """A redirect hop's response: its status and Location, an empty payload."""
    headers = [] if location is None else [("Location", location)]
    return StatusAndHeaders(f"{status} {reason(status)}", [*headers, ("Content-Length", "0")],
                            protocol="HTTP/1.1")


def request_block(url: str, headers: object) -> StatusAndHeaders:
    """`GET <path> HTTP/1.1` with the headers the crawler sent (a `Host` added when the
    record has none: HTTP/1.1 requires it)."""
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    pairs: Sequence[tuple[str, str]] = _pairs(headers)
    if not any(name.lower() == "host" for name, _value in pairs):
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        if parts.port is not None:
            host += f":{parts.port}"
        pairs = [("Host", host), *pairs]
    return StatusAndHeaders(f"GET {target} HTTP/1.1", list(pairs), is_http_request=True)
