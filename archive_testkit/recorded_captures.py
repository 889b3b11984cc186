"""Captures recorded in a catalog the way an ingest records them (`tx.captures.record_segment`),
built from a few plain values: for repository and CDX tests that need exact times, statuses
and URLs rather than a crawl's. The bodies are catalog rows only (no store files)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from archive_pipelines.captures.record_parser import url_key
from archive_pipelines.catalog import Body, CaptureRow, Catalog, CatalogTransaction, SegmentRows, utcnow
from archive_pipelines.catalog.models import Store


@dataclass(frozen=True)
class Fetch:
    """One capture to record: a response of `status` with `body` (None: no body), or a
    failed fetch (`status` None)."""

    url: str
    fetched_ms: int
    status: int | None = 200
    body: bytes | None = b"<html></html>"
    content_type: str | None = "text/html"
    kind: str = "page"
    location: str | None = None  # a redirect's Location (its `final_url`)
    stored: bool = True  # False: the body's hash is recorded but the store lacks it


def primary_store_id(tx: CatalogTransaction) -> int:
    """The id of the catalog's `primary` store row, made (a local raw store) if there is none."""
    store_id: int | None = tx.session.query(Store.id).filter(Store.name == "primary").scalar()
    if store_id is None:
        store = Store(name="primary", kind="local", location="cas", codec="raw")
        tx.session.add(store)
        tx.session.flush()
        store_id = store.id
    return store_id


def record_fetches(catalog: Catalog, fetches: Sequence[Fetch]) -> None:
    """Record `fetches` as one segment of a new session (a primary store row is made if the
    catalog has none)."""
    with catalog.transaction() as tx:
        store_id = primary_store_id(tx)
        session_id = str(uuid.uuid4())
        segment = f"sessions/20261127/{session_id}/{uuid.uuid4().hex}.jsonl"
        captures: list[tuple[int, CaptureRow]] = []
        bodies: dict[str, Body] = {}
        for offset, fetch in enumerate(fetches):
            key = url_key(fetch.url)
            if key is None:
                raise ValueError(f"{fetch.url!r} is no URL the crawler fetches")
            canonical, url_hash, site = key
            sha256 = None if fetch.body is None else hashlib.sha256(fetch.body).hexdigest()
            if sha256 is not None and fetch.stored:
                assert fetch.body is not None
                bodies[sha256] = Body(sha256, len(fetch.body), fetch.content_type or "")
            captures.append((offset * 100, CaptureRow(
                fetch.kind, None, fetch.url, url_hash, site, canonical, fetch.fetched_ms,
                fetch.status, fetch.location or fetch.url, None, fetch.content_type, sha256,
                None if fetch.body is None else len(fetch.body), False,
                "connection refused" if fetch.status is None else None, None, 0)))
        times = [fetch.fetched_ms for fetch in fetches]
        segment_blob = Body(hashlib.sha256(segment.encode()).hexdigest(), 1, "application/jsonl")
        tx.captures.record_segment(SegmentRows(
            path=segment, sha256=segment_blob.sha256, session_id=session_id,
            index_dir=segment.rsplit("/", 1)[0], segment_blob=segment_blob, captures=captures,
            bodies=bodies, records=len(fetches), rejected=0, cut_bytes=0,
            pages=sum(f.kind == "page" for f in fetches), first_ms=min(times),
            last_ms=max(times)), primary_store_id=store_id, now=utcnow())
