"""Page records of browser page loads, in the shape the crawler writes them (a page record with
`navigation_id`, a `request_id`, method and Chromium resource type per request, refused
requests, and the top-level `browser` object with the screenshot and DOM), and a data dir
holding one such crawl: its bodies in the primary store, its segment under sessions/."""

from __future__ import annotations

import hashlib
import io
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from archive_pipelines.blobstore import BlobStore
from archive_pipelines.captures.segment_ingest import ingest_crawl
from tests.helpers.captures import capture_primary, parts_of

SITE = "http://js.example.test"
PAGE_URL = f"{SITE}/app/"
DATA_URL = f"{SITE}/api/items.json"
IMAGE_URL = f"{SITE}/img/item-1.png"
METADATA_URL = "http://169.254.169.254/latest/meta-data/"
SOCKET_URL = "ws://js.example.test/live"
AT_S = 1_795_000_000.25  # 2026-11-18T11:06:40.250Z

Record = dict[str, Any]


def png_bytes(width: int = 64, height: int = 48, color: tuple[int, int, int] = (30, 120, 200)) -> bytes:
    """A real PNG image, as Chromium's screenshot is one."""
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="PNG")
    return out.getvalue()


@dataclass(frozen=True)
class BrowserBodies:
    """The bytes a browser page load stored: the page's HTML, what its script fetched, an
    image it inserted, and the screenshot and the rendered DOM."""

    html: bytes = (b"<!doctype html><html><head><title>Items</title></head><body>"
                   b"<div id=app></div><script>fetch('/api/items.json').then(r => r.json())"
                   b".then(items => { app.innerHTML = items.map(i => `<img src=${i.src}>`) })"
                   b"</script></body></html>")
    data: bytes = b'[{"src": "/img/item-1.png"}]'
    image: bytes = png_bytes(8, 8, (200, 10, 10))
    screenshot: bytes = png_bytes()
    dom: bytes = (b'<!DOCTYPE html><html><head><title>Items</title></head><body><div id="app">'
                  b'<img src="/img/item-1.png"></div><script>fetch(...)</script></body></html>')


def _sha(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def _body(data: bytes, body_type: str) -> dict[str, Any]:
    return {"body_hash": _sha(data), "body_size": len(data), "body_type": body_type}


def request(url: str, *, at: float, resource_type: str, body: bytes | None = None,
            body_type: str | None = None, status: int = 200, method: str = "GET",
            refused: str | None = None) -> Record:
    """One entry of `requests`: answered (with `body`), or refused with the reason."""
    entry: Record = {
        "request_id": f"{uuid.uuid4().int % 10**6}.{uuid.uuid4().int % 1000}",
        "timestamp": at,
        "method": method,
        "url": url,
        "request_headers": [["User-Agent", "archive-pipelines/1 (+browser)"],
                            ["Cookie", "hmac-sha256:" + "ab" * 32]],
        "request_body_hash": None,
        "request_body_size": 0,
        "response": None,
        "redirects": [],
        "error": refused,
        "elapsed_s": 0.0042,
        "resource_type": resource_type,
    }
    if refused is not None:
        entry["refused"] = refused
    elif body is not None:
        assert body_type is not None
        entry["response"] = {
            "status_code": status,
            "headers": [["Content-Type", body_type], ["Content-Length", str(len(body))]],
            **_body(body, body_type),
            "body_truncated": False,
            "body_truncated_reason": None,
        }
    return entry


def browser_record(session_id: str, bodies: BrowserBodies, *, at: float = AT_S,
                   page_url: str = PAGE_URL, mode: str = "auto") -> Record:
    """The record of one browser page load of `page_url`: its document, a `fetch()` of JSON,
    an inserted image, a request to the metadata address and a WebSocket (both refused),
    the screenshot and the DOM. The document is asked at the record's own time."""
    requests = [
        request(page_url, at=at, resource_type="document", body=bodies.html,
                body_type="text/html; charset=utf-8"),
        request(DATA_URL, at=at + 0.1, resource_type="fetch", body=bodies.data,
                body_type="application/json"),
        request(IMAGE_URL, at=at + 0.2, resource_type="image", body=bodies.image,
                body_type="image/png"),
        request(METADATA_URL, at=at + 0.2, resource_type="fetch",
                refused="169.254.169.254 is a link-local address: refused without connecting"),
        request(SOCKET_URL, at=at + 0.3, resource_type="websocket",
                refused="WebSockets are not archived: refused without connecting"),
        request(f"{SITE}/api/track", at=at + 0.3, resource_type="xhr", method="POST",
                refused="method POST: the crawl only GETs"),
    ]
    return {
        "session_id": session_id,
        "page_url": page_url,
        "timestamp": at,
        "navigation_id": "9A1F3C0D2B7E4F5A6C8D9E0F1A2B3C4D",
        "depth": 0,
        "final_url": page_url,
        "requests": requests,
        "redirects": [],
        "error": None,
        "title": "Items",
        "browser": {
            "mode": mode,
            "signals": ["script-fetch", "script-inserted-content"] if mode == "auto" else [],
            "screenshot": _body(bodies.screenshot, "image/png"),
            "dom": _body(bodies.dom, "text/html; charset=utf-8"),
            "timed_out": False,
            "over_allowance": 0,
            "error": None,
        },
    }


def record_line(record: Record) -> bytes:
    return json.dumps(record).encode()


def write_browser_crawl(data_dir: Path, store: BlobStore, records: list[Record],
                        bodies: BrowserBodies) -> Path:
    """Store every body and write `records` (one session's) as one segment of the session;
    the segment's path."""
    for data in (bodies.html, bodies.data, bodies.image, bodies.screenshot, bodies.dom):
        store.put_bytes(data)
    session_id = records[0]["session_id"]
    folder = data_dir / "sessions" / "2026-11-18" / session_id
    folder.mkdir(parents=True)
    segment = folder / "20261118T110640000000Z_000001.jsonl"
    segment.write_bytes(b"".join(record_line(record) + b"\n" for record in records))
    return segment


@dataclass(frozen=True)
class BrowserCrawl:
    """A data dir whose catalog holds one browser page load, ingested."""

    data_dir: Path
    session_id: str
    bodies: BrowserBodies
    report: dict[str, Any]  # the ingest's report (`CrawlIngestReport.to_dict`)


def ingested_browser_crawl(data_dir: Path, *, records: int = 1, catalog_url: str = "") -> BrowserCrawl:
    """A fresh data dir at `data_dir` with `records` browser page loads of PAGE_URL (a second
    apart) in one segment, ingested into its SQLite catalog (or the one at `catalog_url`)."""
    session_id = str(uuid.uuid4())
    bodies = BrowserBodies()
    with parts_of(data_dir, catalog_url) as parts:
        write_browser_crawl(data_dir, parts.primary.store,
                            [browser_record(session_id, bodies, at=AT_S + n) for n in range(records)],
                            bodies)
        report = ingest_crawl(parts.catalog, capture_primary(parts), data_dir)
        assert report.ingested and not report.failed, report.to_dict()
    return BrowserCrawl(data_dir, session_id, bodies, report.to_dict())
