"""Catalog states the crawler never writes, made directly for the export's hostile cases: a
capture (with its crawl record in a file of its own) whose URL, body or blob is not what a
crawl leaves."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from archive_pipelines.catalog import Catalog
from archive_pipelines.catalog.models import Blob, CrawlSegment, CrawlSession, PageFetch
from archive_pipelines.surt import urlkey

SESSION = "00000000-0000-4000-8000-00000000beef"
FETCHED_MS = 1_716_000_000_123


def add_capture(catalog: Catalog, data_dir: Path, *, url: str, body: tuple[str, int] | None,
                blob_id: int | None = None) -> int:
    """A page capture of `url` with a 200 answer whose body is `body` (sha256, size), its
    record written to its own segment file; `blob_id` the body's blob (None: not stored).
    Returns the capture's id."""
    index_path = f"sessions/hostile/{SESSION}/{hashlib.sha256(url.encode()).hexdigest()[:16]}.jsonl"
    record = {"session_id": SESSION, "page_url": url, "timestamp": FETCHED_MS / 1000,
              "requests": [{"url": url, "request_headers": [["User-Agent", "tests"]],
                            "response": {"status_code": 200,
                                         "headers": [["Content-Type", "text/plain"]],
                                         "body_hash": body and f"sha256:{body[0]}",
                                         "body_size": body[1] if body else 0}}]}
    path = data_dir / index_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record) + "\n")
    with catalog.transaction() as tx:
        session = tx.session
        if session.get(CrawlSession, SESSION) is None:
            session.add(CrawlSession(id=SESSION, index_dir=f"sessions/hostile/{SESSION}"))
            session.flush()
        segment = CrawlSegment(path=index_path, sha256="0" * 64, session_id=SESSION, records=1)
        session.add(segment)
        session.flush()
        capture = PageFetch(
            session_id=SESSION, segment_id=segment.id, kind="page", url=url,
            url_hash=hashlib.sha256(url.encode()).hexdigest(), site="http://hostile.test",
            canonical_url=url, fetched_ms=FETCHED_MS, status_code=200, final_url=url,
            content_type="text/plain", body_sha256=body and body[0],
            body_size=body and body[1], body_blob_id=blob_id, index_path=index_path,
            record_offset=0, request_index=0, urlkey=urlkey(url))
        session.add(capture)
        session.flush()
        return int(capture.id)


def add_blob_row(catalog: Catalog, sha256: str, size: int) -> int:
    """A blob row (referenced once) for a body put into the store by the test."""
    with catalog.transaction() as tx:
        blob = Blob(sha256=sha256, size=size, ref_count=1)
        tx.session.add(blob)
        tx.session.flush()
        return int(blob.id)
