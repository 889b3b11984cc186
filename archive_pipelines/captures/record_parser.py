"""One page-fetch record (a JSON line, as the crawler writes it) -> capture rows.

Each entry of `requests` is one fetch: `requests[0]` the page, the rest its sub-requests.
A fetch gives one capture per hop of its redirect chain (`redirect`, its Location as
`final_url`) and one for its last response, or its failure (`page` / `request`); the
record's `title` (absent from records written before the crawler kept it) goes onto the
page capture only. Records come from files on disk, so every field is checked; a record
that breaks a rule is refused whole with the reason (`RecordRefused`), never guessed at.
Userinfo in a URL (`user:password@`, which crawlers before this one could write) is
dropped, never stored.

A browser page load's record adds a top-level `browser` object: its full-page `screenshot`
and rendered `dom` (each {body_hash, body_size, body_type} or null) become captures of kind
`screenshot` and `dom` of the page's URL (its final URL), at the record's time, with no HTTP
status; the rest of the object is checked, not stored. A sub-request the crawl refused
(`refused`: the reason; scope, robots, address policy, the page's allowance, WebSockets) was
never fetched: it is no capture (the record keeps it), while a page whose own document was
refused is a failed `page` capture, as one robots.txt kept out.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any, NamedTuple

from archive_pipelines.canonical_urls import (
    MAX_URL_BYTES,
    try_canonical_url_and_domain,
    without_userinfo,
)
from archive_pipelines.catalog import CaptureRow

MAX_REQUESTS = 10_000  # sub-requests of one page
MAX_TEXT = 2_000  # error messages, content types, navigation ids
MAX_TITLE = 1_000  # a page's title, as the crawler cuts it
EARLIEST_S = 631_152_000  # 1990-01-01: no crawl record is older
LATEST_S = 4_102_444_800  # 2100-01-01
_BODY_HASH = re.compile(r"sha256:([0-9a-f]{64})")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")  # neither PostgreSQL text nor UTF-8 holds them
BROWSER_MODES = ("always", "auto")
_SIGNAL = re.compile(r"[a-z][a-z0-9_-]{0,63}")  # `script-fetch`, as the crawler names them
# `browser` key (and capture kind) -> what its body_type starts with
_RENDERINGS = {"screenshot": "image/", "dom": "text/html"}


class RecordRefused(ValueError):
    """A record that cannot be ingested; the message says why."""


class PageRecord(NamedTuple):
    """A record's captures and what the ledger and the session need of it."""

    session_id: str
    fetched_ms: int  # the page's timestamp
    captures: list[CaptureRow]


def url_key(url: str) -> tuple[str, str, str] | None:
    """(canonical URL, its sha256 hex, site `scheme://host[:port]`) by the crawler's
    canonical form (`canonical_urls`); None for a URL the crawler could not have fetched."""
    parsed = try_canonical_url_and_domain(url)
    if parsed is None:
        return None
    canonical, domain, _fingerprint = parsed
    scheme = canonical[:canonical.index(":")]
    return canonical, hashlib.sha256(canonical.encode()).hexdigest(), f"{scheme}://{domain}"


def parse_record(line: bytes, *, session_id: str) -> PageRecord:
    """The captures of one JSON line of a segment of `session_id`; RecordRefused if any
    field is not what the crawler writes."""
    try:
        record = json.loads(line)
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordRefused(f"not a JSON record: {exc}") from None
    if not isinstance(record, dict):
        raise RecordRefused("not a JSON object")
    recorded_session = record.get("session_id")
    if recorded_session != session_id:
        raise RecordRefused(f"session_id {_show(recorded_session)} is not the segment's session "
                            f"{session_id}")
    page_url = _url(record.get("page_url"), "page_url")
    fetched_ms = _timestamp_ms(record.get("timestamp"), "timestamp")
    depth = record.get("depth")
    if depth is not None and not _is_int(depth, 0, 1_000_000):
        raise RecordRefused(f"depth {_show(depth)} is not a non-negative integer")
    navigation_id = _text(record.get("navigation_id"), "navigation_id", limit=64)
    final_url = record.get("final_url")
    if final_url is not None:
        final_url = _url(final_url, "final_url")
    requests = record.get("requests")
    if not isinstance(requests, list):
        raise RecordRefused("requests is not a list")
    error = _text(record.get("error"), "error", limit=MAX_TEXT)
    title = _title(record.get("title"))
    renderings = _browser_captures(record.get("browser"), url=final_url or page_url,
                                   navigation_id=navigation_id, fetched_ms=fetched_ms)
    if not requests:  # nothing fetched (robots.txt said no): a failed capture of the page
        return PageRecord(session_id, fetched_ms, [_row(
            "page", page_url, navigation_id=navigation_id, fetched_ms=fetched_ms, status=None,
            final_url=None, index=0, error=error or "not fetched", depth=depth, title=title)])
    if len(requests) > MAX_REQUESTS:
        raise RecordRefused(f"{len(requests)} requests (at most {MAX_REQUESTS})")
    captures: list[CaptureRow] = []
    for index, request in enumerate(requests):
        where = f"requests[{index}]"
        if not isinstance(request, dict):
            raise RecordRefused(f"{where} is not an object")
        refused = _text(request.get("refused"), f"{where}.refused", limit=MAX_TEXT)
        if refused is not None and index > 0:
            if not isinstance(request.get("url"), str):
                raise RecordRefused(f"{where}.url {_show(request.get('url'))} is not a string")
            continue  # never fetched (a WebSocket's ws:// too): no capture
        captures.extend(_fetch_captures(
            request, where=where, index=index, navigation_id=navigation_id,
            default_ms=fetched_ms,
            depth=depth if index == 0 else None,
            final_url=final_url if index == 0 else None,
            title=title if index == 0 else None))
    captures.extend(renderings)
    return PageRecord(session_id, fetched_ms, captures)


def _browser_captures(value: object, *, url: str, navigation_id: str | None,
                      fetched_ms: int) -> list[CaptureRow]:
    """The `screenshot` and `dom` captures of a record's `browser` object (none without one)."""
    if value is None:
        return []
    if not isinstance(value, dict):
        raise RecordRefused("browser is not an object")
    mode = value.get("mode")
    if mode not in BROWSER_MODES:
        raise RecordRefused(f"browser.mode {_show(mode)} is not one of {', '.join(BROWSER_MODES)}")
    signals = value.get("signals", [])
    if not isinstance(signals, list) or len(signals) > 100 or not all(
            isinstance(name, str) and _SIGNAL.fullmatch(name) for name in signals):
        raise RecordRefused("browser.signals is not a list of signal names")
    if not isinstance(value.get("timed_out", False), bool):
        raise RecordRefused("browser.timed_out is not true/false")
    over = value.get("over_allowance", 0)
    if not _is_int(over, 0, MAX_REQUESTS * 100):
        raise RecordRefused(f"browser.over_allowance {_show(over)} is not a count")
    _text(value.get("error"), "browser.error", limit=MAX_TEXT)
    rows = []
    for kind, media in _RENDERINGS.items():
        body = value.get(kind)
        if body is None:
            continue
        where = f"browser.{kind}"
        if not isinstance(body, dict):
            raise RecordRefused(f"{where} is not an object")
        sha256 = _body_hash(body.get("body_hash"), f"{where}.body_hash")
        if sha256 is None:
            raise RecordRefused(f"{where}.body_hash is missing")
        size = body.get("body_size")
        if not _is_int(size, 0, 1 << 50):
            raise RecordRefused(f"{where}.body_size {_show(size)} is not a size")
        content_type = _text(body.get("body_type"), f"{where}.body_type", limit=255)
        if content_type is None or not content_type.lower().startswith(media):
            raise RecordRefused(f"{where}.body_type {_show(content_type)} is not {media}...")
        rows.append(_row(kind, url, navigation_id=navigation_id, fetched_ms=fetched_ms,
                         status=None, final_url=None, index=0, content_type=content_type,
                         body_sha256=sha256, body_size=size))
    return rows


def _fetch_captures(request: dict[str, Any], *, where: str, index: int,
                    navigation_id: str | None, default_ms: int,
                    depth: int | None, final_url: str | None,
                    title: str | None = None) -> list[CaptureRow]:
    kind = "page" if index == 0 else "request"
    url = _url(request.get("url"), f"{where}.url")
    at = request.get("timestamp")
    fetched_ms = default_ms if at is None else _timestamp_ms(at, f"{where}.timestamp")
    error = _text(request.get("error"), f"{where}.error", limit=MAX_TEXT)
    hops = request.get("redirects") or []
    if not isinstance(hops, list) or len(hops) > 100:
        raise RecordRefused(f"{where}.redirects is not a list of at most 100 hops")
    chain: list[list[object]] = []
    rows: list[CaptureRow] = []
    for number, hop in enumerate(hops):
        spot = f"{where}.redirects[{number}]"
        if not isinstance(hop, dict):
            raise RecordRefused(f"{spot} is not an object")
        hop_url = _url(hop.get("url"), f"{spot}.url")
        hop_status = _status(hop.get("status"), f"{spot}.status")
        location = hop.get("location")
        if location is not None and not (isinstance(location, str) and len(location) <= MAX_URL_BYTES):
            raise RecordRefused(f"{spot}.location is not a URL string")
        location = None if location is None else without_userinfo(location)
        chain.append([hop_url, hop_status, location])
        rows.append(_row("redirect", hop_url, navigation_id=navigation_id, fetched_ms=fetched_ms,
                         status=hop_status, final_url=location, index=index))
    response = request.get("response")
    status: int | None = None
    content_type = body_sha256 = None
    body_size: int | None = None
    truncated = False
    if response is not None:
        if not isinstance(response, dict):
            raise RecordRefused(f"{where}.response is not an object")
        status = _status(response.get("status_code"), f"{where}.response.status_code")
        content_type = _text(response.get("body_type"), f"{where}.response.body_type", limit=255)
        body_sha256 = _body_hash(response.get("body_hash"), f"{where}.response.body_hash")
        size = response.get("body_size", 0)
        if not _is_int(size, 0, 1 << 50):
            raise RecordRefused(f"{where}.response.body_size {_show(size)} is not a size")
        body_size = size if body_sha256 is not None else None
        truncated = response.get("body_truncated", False)
        if not isinstance(truncated, bool):
            raise RecordRefused(f"{where}.response.body_truncated is not true/false")
    elif error is None:
        error = "no response"
    rows.append(_row(kind, url, navigation_id=navigation_id, fetched_ms=fetched_ms,
                     status=status, final_url=final_url if final_url is not None else url,
                     index=index, content_type=content_type, body_sha256=body_sha256,
                     body_size=body_size, truncated=truncated, error=error, depth=depth,
                     redirects=json.dumps(chain, ensure_ascii=False) if chain else None,
                     title=title))
    return rows


def _row(kind: str, url: str, *, navigation_id: str | None, fetched_ms: int,
         status: int | None, final_url: str | None, index: int,
         content_type: str | None = None, body_sha256: str | None = None,
         body_size: int | None = None, truncated: bool = False, error: str | None = None,
         depth: int | None = None, redirects: str | None = None,
         title: str | None = None) -> CaptureRow:
    key = url_key(url)
    assert key is not None  # _url checked it
    canonical, url_hash, site = key
    return CaptureRow(kind, navigation_id, url, url_hash, site, canonical, fetched_ms, status,
                      final_url, redirects, content_type, body_sha256, body_size, truncated,
                      error, depth, index, title)


def _url(value: object, name: str) -> str:
    """The URL, checked, without userinfo."""
    if not isinstance(value, str):
        raise RecordRefused(f"{name} {_show(value)} is not a URL string")
    if len(value) > MAX_URL_BYTES:
        raise RecordRefused(f"{name} is {len(value):,} characters long (at most {MAX_URL_BYTES:,})")
    if url_key(value) is None:
        raise RecordRefused(f"{name} {_show(without_userinfo(value))} is not an http(s) URL "
                            "the crawler fetches")
    return without_userinfo(value)


def _timestamp_ms(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not EARLIEST_S <= value <= LATEST_S:
        raise RecordRefused(f"{name} {_show(value)} is not epoch seconds between 1990 and 2100")
    return round(value * 1000)


def _status(value: object, name: str) -> int:
    if not _is_int(value, 100, 599):
        raise RecordRefused(f"{name} {_show(value)} is not an HTTP status (100-599)")
    assert isinstance(value, int)
    return value


def _body_hash(value: object, name: str) -> str | None:
    if value is None:
        return None
    match = _BODY_HASH.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise RecordRefused(f"{name} {_show(value)} is not sha256:<64 hex digits>")
    return match.group(1)


def _text(value: object, name: str, *, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise RecordRefused(f"{name} is not a string of at most {limit} characters")
    return value


def _title(value: object) -> str | None:
    title = _text(value, "title", limit=MAX_TITLE)
    if title is not None and _UNSTORABLE.search(title):
        raise RecordRefused("title holds a NUL or an unpaired surrogate")
    return title


def _is_int(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

