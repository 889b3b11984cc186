"""The page record's `title`: written for every record (null when none) and read back by ingest."""

from __future__ import annotations

import hashlib
import json
import time

import pytest

from archive_pipelines.blobstore import PutResult
from archive_pipelines.captures.record_parser import parse_record
from frontier_service.archiving.page_record import page_record
from frontier_service.fetch import FetchResult, links_from_fetch

pytestmark = pytest.mark.unit

BODY = "<html><head><title>\n  Caf\u00e9 \u2014 menu </title></head><body></body></html>".encode()


def fetched() -> FetchResult:
    return FetchResult(url="http://h.test/", final_url="http://h.test/", status=200, body=BODY,
                       content_type="text/html", charset="utf-8", started_at=time.time())


def test_the_pages_title_is_a_top_level_field_that_ingest_puts_on_the_page_capture() -> None:
    result = fetched()
    links = links_from_fetch(result)
    assert links is not None
    put = PutResult(hashlib.sha256(BODY).hexdigest(), len(BODY), stored_bytes=len(BODY), created=True)
    asset = FetchResult(url="http://h.test/s.css", final_url="http://h.test/s.css", status=200,
                        body=b"", content_type="text/css", started_at=time.time())
    record = page_record(session_id="s1", page_url="http://h.test/", depth=0, page=(result, put),
                         assets=[(asset, None)], title=links.title)
    line = json.dumps(record).encode()
    assert json.loads(line)["title"] == "Caf\u00e9 \u2014 menu"
    page, request = parse_record(line, session_id="s1").captures
    assert (page.kind, page.title) == ("page", "Caf\u00e9 \u2014 menu")
    assert (request.kind, request.title) == ("request", None)


def test_a_record_without_a_title_says_null() -> None:
    record = page_record(session_id="s1", page_url="http://h.test/", depth=0, page=(fetched(), None))
    assert "title" in record and record["title"] is None
    [page] = parse_record(json.dumps(record).encode(), session_id="s1").captures
    assert page.title is None
