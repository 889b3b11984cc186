"""The page-fetch record of a browser page load: an HTTP page record (page_record.py) whose
`requests` are every request the page made, plus a top-level `browser` object.

- `navigation_id`: the load's. `requests[0]`: the page's own document, as an HTTP page record
  has it (its redirect hops in `redirects`, the final answer in `response`); `requests[1:]`:
  every other request of the load, in the order they began.
- every entry: `request_id` (the browser's), `method`, `timestamp`, `elapsed_s`,
  `request_headers` (the browser's; Cookie and Authorization values keyed hashes),
  `resource_type` (Chromium's: document, stylesheet, script, image, font, fetch, xhr, media,
  websocket, other ...), `response` (null when none) and `error`; a refused request (scope,
  robots, address, allowance, WebSocket) also has `refused` (the reason, as `error`) and no
  response.
- `browser`: {mode, signals, screenshot, dom, timed_out, over_allowance, error}; screenshot
  (PNG) and dom (UTF-8 HTML) are {body_hash, body_size, body_type} of blobs in the store, or
  null when the load produced none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from archive_pipelines.blobstore import PutResult
from frontier_service.archiving.page_record import StoredFetch, page_record, request_entry
from frontier_service.fetch.result import FetchResult
from frontier_service.frontier.frontier_record import ResourceType


class RecordedRequest(Protocol):
    """What the record reads of one request of a page load (browser.RecordedRequest; the
    archive layer sits below the browser's and names only what it reads)."""

    @property
    def request_id(self) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def resource_type(self) -> str: ...
    @property
    def request_headers(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def result(self) -> FetchResult: ...
    @property
    def started_at(self) -> float: ...
    @property
    def elapsed_s(self) -> float: ...
    @property
    def refused(self) -> str | None: ...


class PageLoad(Protocol):
    """What the record reads of a page load (browser.PageLoad)."""

    @property
    def navigation_id(self) -> str: ...
    @property
    def dom(self) -> str | None: ...
    @property
    def screenshot(self) -> bytes | None: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def over_allowance(self) -> int: ...
    @property
    def error(self) -> str | None: ...


SCREENSHOT_TYPE = "image/png"
DOM_TYPE = "text/html; charset=utf-8"

_DOCUMENT_FIELDS = ("request_id", "method", "request_headers", "resource_type")

StoredRequest = tuple[RecordedRequest, PutResult | None]  # a browser request and its body


@dataclass(frozen=True)
class BrowserView:
    """How the page was rendered and what came of it: the `browser` object's contents."""

    mode: str  # always | auto
    signals: tuple[str, ...]  # why auto rendered it (signal names, "sample", "learnt")
    load: PageLoad
    screenshot: PutResult | None
    dom: PutResult | None


def browser_page_record(*, session_id: str, page_url: str, depth: int, document: StoredFetch,
                        document_request: RecordedRequest | None,
                        requests: Sequence[StoredRequest], view: BrowserView,
                        title: str | None = None) -> dict[str, Any]:
    """The JSON-ready record of one browser page load.

    Args:
        document: the page's own fetch (its response and redirect hops) and its stored body.
        document_request: the browser's request for it (its id and headers), if it made one.
        requests: the load's other requests, in the order they began.
    """
    record = page_record(session_id=session_id, page_url=page_url, depth=depth, page=document,
                         navigation_id=view.load.navigation_id, title=title)
    first = record["requests"][0]
    if document_request is not None:  # the time and duration stay the fetch's own
        fields = _browser_fields(document_request)
        first.update({key: fields[key] for key in _DOCUMENT_FIELDS})
    record["requests"] = [first, *(browser_request_entry(*item) for item in requests)]
    load = view.load
    record["browser"] = {
        "mode": view.mode,
        "signals": list(view.signals),
        "screenshot": _blob(view.screenshot, SCREENSHOT_TYPE),
        "dom": _blob(view.dom, DOM_TYPE),
        "timed_out": load.timed_out,
        "over_allowance": load.over_allowance,
        "error": load.error,
    }
    return record


def browser_request_entry(recorded: RecordedRequest, stored: PutResult | None) -> dict[str, Any]:
    """One request of the page load: an HTTP record's entry with the browser's fields."""
    entry = request_entry(recorded.result, stored, resource_type=ResourceType.OTHER)
    entry.update(_browser_fields(recorded))
    if recorded.refused is not None:
        entry.update(response=None, error=recorded.refused, refused=recorded.refused)
    return entry


def _browser_fields(recorded: RecordedRequest) -> dict[str, Any]:
    return {"request_id": recorded.request_id, "method": recorded.method,
            "timestamp": round(recorded.started_at, 3), "elapsed_s": round(recorded.elapsed_s, 4),
            "request_headers": [list(pair) for pair in recorded.request_headers],
            "resource_type": recorded.resource_type}


def _blob(put: PutResult | None, body_type: str) -> dict[str, Any] | None:
    if put is None:
        return None
    return {"body_hash": f"sha256:{put.sha256}", "body_size": put.size, "body_type": body_type}
