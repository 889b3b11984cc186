"""One page-fetch index record (one JSON object per page) from the fetches of a page and its assets.

The base fields: session_id, page_url, timestamp, navigation_id, requests[...] with a
response {status_code, headers, body_hash "sha256:<hex>", body_size, body_type}.
Our additions: top-level `depth`, `final_url`, `redirects` and `error` (of the page
fetch, which is requests[0]), and `title` (the page's HTML <title>, whitespace collapsed, at
most 1,000 characters; null for a page without one, a body that is not HTML, and a fetch
that was not a 2xx: only the bodies parsed for links are read); per request `redirects`, `error`, `elapsed_s`,
`resource_type` (what it was fetched for: document, stylesheet, script, image, font,
media, other) and `response.body_truncated` with `body_truncated_reason` (why, in one
line; null when not cut), and `response.body_encoding` when the stored body still carries
a Content-Encoding the crawler could not decode (otherwise bodies are stored decoded).
An unchanged page (a 304 to a conditional request) keeps status 304 and the 304's headers, and
its `response` names the body it stands for: `body_hash`, `body_size` and `body_type` are
those of the earlier capture, which `response.revisit_of` names ({url, timestamp, status,
content_type}: its URL, request time, status and Content-Type header).
Timestamps are epoch seconds (float, ms precision).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from archive_pipelines.blobstore import PutResult
from archive_pipelines.canonical_urls import without_userinfo
from frontier_service.archiving.validators import Validators
from frontier_service.fetch.result import FetchResult
from frontier_service.frontier.frontier_record import ResourceType

StoredFetch = tuple[FetchResult, PutResult | None]  # a fetch and where its body went
_URL_HEADERS = frozenset({"location", "content-location"})  # kept without user:password@


def page_record(
    *,
    session_id: str,
    page_url: str,
    depth: int,
    page: StoredFetch,
    assets: Sequence[StoredFetch] = (),
    navigation_id: str | None = None,
    resource_type: ResourceType = ResourceType.DOCUMENT,
    title: str | None = None,
    revisit_of: Validators | None = None,
) -> dict[str, Any]:
    """The JSON-ready record of one page visit; `resource_type` is the page fetch's, the
    assets' are not known here (other); `title` the page's, as link extraction read it;
    `revisit_of`: the earlier capture whose body a 304 page stands for."""
    result = page[0]
    first = request_entry(*page, resource_type=resource_type, revisit_of=revisit_of)
    return {
        "session_id": session_id,
        "page_url": page_url,
        "timestamp": round(result.started_at, 3),
        "navigation_id": navigation_id or str(uuid.uuid4()),
        "depth": depth,
        "final_url": result.final_url,
        "requests": [first, *(request_entry(*asset) for asset in assets)],
        "redirects": first["redirects"],
        "error": result.error,
        "title": title,
    }


def request_entry(result: FetchResult, stored: PutResult | None, *,
                  resource_type: ResourceType = ResourceType.OTHER,
                  revisit_of: Validators | None = None) -> dict[str, Any]:
    """One entry of `requests`: what was asked, and the response if one arrived."""
    return {
        "request_id": str(uuid.uuid4()),
        "timestamp": round(result.started_at, 3),
        "method": "GET",
        "url": result.final_url,
        "request_headers": [list(pair) for pair in result.request_headers],
        "request_body_hash": None,  # crawler GETs have no body
        "request_body_size": 0,
        "response": _response(result, stored, revisit_of),
        "redirects": [
            {"url": hop.url, "status": hop.status, "location": without_userinfo(hop.location)}
            for hop in result.redirects
        ],
        "error": result.error,
        "elapsed_s": round(result.elapsed_s, 4),
        "resource_type": resource_type.value,
    }


def _response(result: FetchResult, stored: PutResult | None,
              revisit_of: Validators | None = None) -> dict[str, Any] | None:
    if result.status is None:
        return None
    if revisit_of is not None:
        return {
            "status_code": result.status,
            "headers": _headers(result),
            "body_hash": f"sha256:{revisit_of.sha256}",
            "body_size": revisit_of.size,
            "body_type": revisit_of.body_type,
            "body_truncated": False,
            "body_truncated_reason": None,
            "revisit_of": {"url": revisit_of.url, "timestamp": revisit_of.timestamp,
                           "status": revisit_of.status, "content_type": revisit_of.content_type},
        }
    return {
        "status_code": result.status,
        "headers": _headers(result),
        "body_hash": None if stored is None else f"sha256:{stored.sha256}",
        "body_size": 0 if stored is None else stored.size,
        "body_type": result.content_type,
        "body_truncated": result.truncated,
        "body_truncated_reason": result.truncated_reason,
        **({"body_encoding": result.body_encoding} if result.body_encoding else {}),
    }


def _headers(result: FetchResult) -> list[list[str]]:
    return [[name, without_userinfo(value) if name.lower() in _URL_HEADERS else value]
            for name, value in result.response_headers]
