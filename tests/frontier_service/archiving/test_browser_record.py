"""The page record of a browser page load, field by field (the interface the captures ingest
reads): the document first with its redirect hops, every other request after in the order
they began, refused ones marked, and the `browser` object naming the screenshot and DOM blobs."""

from __future__ import annotations

import hashlib
import json

import pytest

from archive_pipelines.blobstore import PutResult
from frontier_service.archiving.browser_record import BrowserView, browser_page_record
from frontier_service.browser.page_load import PageLoad, RecordedRequest, refused_result
from frontier_service.fetch.result import FetchResult, RedirectHop

pytestmark = pytest.mark.unit

PAGE = "http://h.test/old"
FINAL = "http://h.test/page"
HTML = b"<html><body><div id=app></div><script src=/app.js></script></body></html>"


def put(body: bytes) -> PutResult:
    return PutResult(hashlib.sha256(body).hexdigest(), len(body), stored_bytes=len(body),
                     created=True)


def recorded(url: str, result: FetchResult, *, resource_type: str, started: float,
             navigation: bool = False, refused: str | None = None) -> RecordedRequest:
    return RecordedRequest(request_id=f"id-{url.rsplit('/', 1)[1]}", navigation_id="nav-1",
                           method="GET", url=url, resource_type=resource_type,
                           is_navigation=navigation,
                           request_headers=(("Cookie", "hmac-sha256:abc"), ("Accept", "*/*")),
                           result=result, started_at=started, elapsed_s=0.01, refused=refused)


def test_a_browser_record_holds_every_request_and_the_browser_view() -> None:
    document = FetchResult(url=PAGE, final_url=FINAL, status=200, body=HTML, content_type="text/html",
                           redirects=[RedirectHop(PAGE, 301, FINAL)], started_at=100.0,
                           elapsed_s=0.2)
    script = FetchResult(url="http://h.test/app.js", final_url="http://h.test/app.js", status=200,
                         body=b"x()", content_type="text/javascript", started_at=101.0)
    reason = "out of scope: domain not allowed"
    requests = [
        recorded("http://h.test/app.js", script, resource_type="script", started=101.0),
        recorded("http://other.test/t.png", refused_result("http://other.test/t.png", reason),
                 resource_type="image", started=101.5, refused=reason),
    ]
    doc_request = recorded(PAGE, document, resource_type="document", started=100.5,
                           navigation=True)
    load = PageLoad(url=PAGE, final_url=FINAL, navigation_id="nav-1",
                    requests=(doc_request, *requests), dom="<html>…</html>", screenshot=b"PNG",
                    timed_out=False, over_allowance=3, error=None)
    view = BrowserView(mode="auto", signals=("client-routing", "sample"), load=load,
                       screenshot=put(b"PNG"), dom=put("<html>…</html>".encode()))
    record = json.loads(json.dumps(browser_page_record(
        session_id="s1", page_url=PAGE, depth=1, document=(document, put(HTML)),
        document_request=doc_request,
        requests=[(requests[0], put(b"x()")), (requests[1], None)], view=view, title="App")))

    assert record["navigation_id"] == "nav-1" and record["page_url"] == PAGE
    assert record["final_url"] == FINAL and record["timestamp"] == 100.0
    assert record["redirects"] == [{"url": PAGE, "status": 301, "location": FINAL}]
    first, script_entry, refused = record["requests"]
    assert first["request_id"] == "id-old" and first["resource_type"] == "document"
    assert first["redirects"] == record["redirects"] and first["url"] == FINAL
    assert first["response"]["status_code"] == 200
    assert first["response"]["body_hash"] == f"sha256:{put(HTML).sha256}"
    assert first["request_headers"] == [["Cookie", "hmac-sha256:abc"], ["Accept", "*/*"]]
    assert (first["timestamp"], first["elapsed_s"]) == (100.0, 0.2)  # the fetch's own
    assert script_entry["request_id"] == "id-app.js" and script_entry["resource_type"] == "script"
    assert script_entry["timestamp"] == 101.0 and script_entry["elapsed_s"] == 0.01
    assert script_entry["response"]["body_size"] == 3 and script_entry["error"] is None
    assert "refused" not in script_entry
    assert refused["refused"] == reason and refused["error"] == reason
    assert refused["response"] is None and refused["resource_type"] == "image"
    assert record["browser"] == {
        "mode": "auto", "signals": ["client-routing", "sample"],
        "screenshot": {"body_hash": f"sha256:{put(b'PNG').sha256}", "body_size": 3,
                       "body_type": "image/png"},
        "dom": {"body_hash": f"sha256:{put('<html>…</html>'.encode()).sha256}",
                "body_size": len("<html>…</html>".encode()),
                "body_type": "text/html; charset=utf-8"},
        "timed_out": False, "over_allowance": 3, "error": None}
    assert record["title"] == "App"


def test_a_failed_load_has_no_screenshot_nor_dom() -> None:
    document = FetchResult(url=PAGE, final_url=PAGE, status=200, body=HTML,
                           content_type="text/html", started_at=100.0)
    load = PageLoad(url=PAGE, final_url=PAGE, navigation_id="nav-2", requests=(), dom=None,
                    screenshot=None, timed_out=False, over_allowance=0,
                    error="the browser died while loading the page, twice")
    view = BrowserView(mode="always", signals=(), load=load, screenshot=None, dom=None)
    record = browser_page_record(session_id="s1", page_url=PAGE, depth=0,
                                 document=(document, put(HTML)), document_request=None,
                                 requests=[], view=view)
    assert [r["resource_type"] for r in record["requests"]] == ["document"]
    assert record["browser"]["screenshot"] is None and record["browser"]["dom"] is None
    assert record["browser"]["error"] == "the browser died while loading the page, twice"
    assert record["navigation_id"] == "nav-2"
