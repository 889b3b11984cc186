"""What one crawl captured, read from its page records (`iter_records` over the sessions dir).

- pages: records whose own fetch was for a document (`requests[0].resource_type`
  "document"; assets the HTTP crawl fetches on their own are records of other types) and
  got an answer (a response, any status);
- rendered: records with a top-level `browser` object (a browser page load); failed: those
  whose `browser.error` is set; timed out: `browser.timed_out`;
- window: the first request's start (over every request entry of every record) to the last
  blob written to the store (the newest file's mtime under the data dir's `cas/`: a page's
  body, or a browser page's screenshot and DOM, stored when its page is archived). A browser
  page's record keeps its HTTP fetch's time as requests[0] and is archived once the page
  load, the DOM and the screenshot are done, so the requests alone would end the window
  early. Start-up, the idle wait at the end and shut-down are outside it;
- resources: every distinct URL any record's request entries asked for and got an answer
  for (a response, any status), redirect hops included, in canonical form
  (`archive_pipelines.canonical_urls.canonicalize`: the frontier's, so the browser's spelling
  of a URL and the HTTP crawler's compare equal), browser-internal requests aside
  (`/favicon.ico`); refused requests have no response and do not count.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from archive_pipelines.canonical_urls import InvalidURL, canonicalize
from frontier_service.archiving import iter_records

BROWSER_INTERNAL_PATHS = frozenset({"/favicon.ico"})


@dataclass
class CrawlRecords:
    """The figures of one crawl's records."""

    records: int = 0
    pages: int = 0
    rendered: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (page URL, error)
    timed_out: int = 0
    first_start: float | None = None
    last_end: float | None = None
    # canonical URL -> (the page that requested it first, its resource type)
    resources: dict[str, tuple[str, str]] = field(default_factory=dict)
    rendered_pages: set[str] = field(default_factory=set)  # canonical page URLs
    html_not_rendered: list[str] = field(default_factory=list)  # 200 text/html, no `browser`
    page_urls: set[str] = field(default_factory=set)  # canonical page URLs

    @property
    def window_s(self) -> float:
        if self.first_start is None or self.last_end is None:
            return 0.0
        return self.last_end - self.first_start

    @property
    def pages_per_s(self) -> float | None:
        return self.pages / self.window_s if self.window_s > 0 else None


def read_crawl(data_dir: Path, *, normalize: Callable[[str], str] = lambda url: url) -> CrawlRecords:
    """The figures of every record under the data dir's `sessions/`; `normalize` maps a URL
    before it is canonicalized (e.g. a per-run port to a fixed one)."""
    found = CrawlRecords()
    sessions = data_dir / "sessions"
    for record in iter_records(sessions) if sessions.exists() else ():
        add_record(found, record, normalize=normalize)
    found.last_end = _last_write(data_dir / "cas", found.last_end)
    return found


def _last_write(store: Path, fallback: float | None) -> float | None:
    """The newest file's mtime under `store` (epoch seconds), else `fallback`."""
    newest = None
    for directory, _, files in os.walk(store):
        for name in files:
            with contextlib.suppress(OSError):
                mtime = os.stat(os.path.join(directory, name)).st_mtime
                newest = mtime if newest is None else max(newest, mtime)
    return newest if newest is not None else fallback


def add_record(found: CrawlRecords, record: dict[str, Any], *,
               normalize: Callable[[str], str]) -> None:
    found.records += 1
    requests = record.get("requests") or []
    page_url = canonical(normalize(str(record.get("page_url"))))
    if requests and requests[0].get("resource_type") == "document" and requests[0].get("response"):
        found.pages += 1
        found.page_urls.add(page_url)
    browser = record.get("browser")
    if not isinstance(browser, dict) and requests and _html_200(requests[0]):
        found.html_not_rendered.append(page_url)
    if isinstance(browser, dict):
        found.rendered += 1
        found.rendered_pages.add(page_url)
        if browser.get("error"):
            found.failed.append((page_url, str(browser["error"])))
        found.timed_out += bool(browser.get("timed_out"))
    for request in requests:
        _time(found, request)
        kind = str(request.get("resource_type"))
        for hop in request.get("redirects") or []:
            if hop.get("status") is not None:
                _resource(found, normalize(str(hop.get("url"))), page_url, kind)
        if request.get("response") is not None:
            _resource(found, normalize(str(request.get("url"))), page_url, kind)


def _html_200(request: dict[str, Any]) -> bool:
    response = request.get("response") or {}
    return (request.get("resource_type") == "document" and response.get("status_code") == 200
            and str(response.get("body_type") or "").startswith("text/html"))


def canonical(url: str) -> str:
    try:
        return canonicalize(url)
    except InvalidURL:
        return url


def _resource(found: CrawlRecords, url: str, page_url: str, kind: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.path in BROWSER_INTERNAL_PATHS:
        return
    found.resources.setdefault(canonical(url), (page_url, kind))


def _time(found: CrawlRecords, request: dict[str, Any]) -> None:
    start = request.get("timestamp")
    if not isinstance(start, int | float):
        return
    end = start + float(request.get("elapsed_s") or 0.0)
    found.first_start = start if found.first_start is None else min(found.first_start, start)
    found.last_end = end if found.last_end is None else max(found.last_end, end)


def coverage(of: Iterable[str], by: Iterable[str]) -> float | None:
    """The share of the URLs `of` that `by` holds too (None when `of` is empty)."""
    wanted = set(of)
    return len(wanted & set(by)) / len(wanted) if wanted else None
