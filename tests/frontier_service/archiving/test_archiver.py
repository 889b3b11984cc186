"""The archiver over real fetches: blob dedup across hosts, records, segment summaries."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest

from archive_pipelines.blobstore import LocalBlobStore, S3BlobStore
from archive_testkit.testweb import TestWeb
from frontier_service.archiving import ArchivedPage, Archiver, PageIndexWriter, SegmentSummary, iter_records
from frontier_service.fetch import FetchResult, links_from_fetch
from tests.frontier_service.fetch.web import CLOSING, PLAIN, SPECIAL, make_fetcher

SESSION = "6d2f1a9e-8b7c-4e3d-a1f0-123456789abc"


class FakeClock:
    def __init__(self, now: float = 1_715_947_200.0) -> None:  # 2024-05-17 12:00 UTC
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_archiver(root: Path, clock: FakeClock, **options: Any) -> Archiver:
    store = LocalBlobStore(root / "blobs", name="crawl", codec="raw")
    return Archiver(store, PageIndexWriter(root / "data", SESSION), clock=clock, **options)


async def fetch_page_with_assets(port: int, url: str) -> tuple[FetchResult, list[FetchResult]]:
    async with make_fetcher(port) as fetcher:
        page = await fetcher.fetch(url)
        links = links_from_fetch(page)
        assert links is not None
        return page, [await fetcher.fetch(asset) for asset in links.assets]


def test_shared_assets_are_stored_once_and_the_segment_adds_up(web: TestWeb, tmp_path: Path) -> None:
    clock = FakeClock()
    archiver = make_archiver(tmp_path, clock, segment_pages=3)

    async def main() -> tuple[list[ArchivedPage], SegmentSummary, bool]:
        archived = []
        for host in PLAIN[:2]:
            page, assets = await fetch_page_with_assets(web.port, f"http://{host}/")
            archived.append(await archiver.archive(page, f"http://{host}/", 0, assets=assets))
            clock.now += 1
        async with make_fetcher(web.port, max_attempts=1) as fetcher:
            dead = await fetcher.fetch(f"http://{CLOSING}/s1/p1.html")
        assert not archiver.should_close()
        archived.append(await archiver.archive(dead, f"http://{CLOSING}/s1/p1.html", 2))
        full = archiver.should_close()
        clock.now += 1
        return archived, await archiver.close_segment(), full

    (first, second, failed), summary, full = asyncio.run(main())
    assert full  # segment_pages=3 reached
    assert first.new_blobs == 5 and second.new_blobs == 1  # the 4 shared assets were already there
    assert first.status == second.status == 200 and first.error is None
    assert failed.error and failed.status is None and failed.body_sha256 is None and failed.bytes == 0
    assert (summary.pages, summary.new_blobs, summary.errors) == (3, 6, 1)
    assert summary.bytes == first.bytes + second.bytes
    assert summary.stored_bytes == sum(
        p.stat().st_size for p in (tmp_path / "blobs").rglob("*") if p.is_file()
    )
    assert (summary.started, summary.ended) == (1_715_947_200.0, 1_715_947_203.0)
    assert summary.pages_per_second == 1.0
    assert summary.partition_date == "2024-05-17" and summary.session_id == SESSION
    assert summary.segment_path is not None
    assert summary.segment_path.parent == tmp_path.resolve() / "data" / "sessions" / "2024-05-17" / SESSION

    records = list(iter_records(summary.segment_path))
    assert [r["page_url"] for r in records] == [
        f"http://{PLAIN[0]}/",
        f"http://{PLAIN[1]}/",
        f"http://{CLOSING}/s1/p1.html",
    ]
    store = LocalBlobStore(tmp_path / "blobs", name="crawl", codec="raw")
    for record, archived in zip(records, (first, second, failed), strict=True):
        assert record["session_id"] == SESSION and record["error"] == archived.error
        assert set(record) >= {
            "session_id",
            "page_url",
            "timestamp",
            "navigation_id",
            "requests",
            "redirects",
            "error",
        }
    page_request = records[0]["requests"][0]
    response = page_request["response"]
    assert response["status_code"] == 200 and response["body_type"] == "text/html"
    assert response["body_hash"] == f"sha256:{first.body_sha256}"
    assert len(records[0]["requests"]) == 5  # the page and its four assets
    for request in records[0]["requests"]:
        digest = request["response"]["body_hash"].removeprefix("sha256:")
        with store.open(digest) as blob:
            body = blob.read()
        assert hashlib.sha256(body).hexdigest() == digest and len(body) == request["response"]["body_size"]
    assert (
        records[1]["requests"][1]["response"]["body_hash"]
        == records[0]["requests"][1]["response"]["body_hash"]
    )
    assert records[2]["requests"][0]["response"] is None and records[2]["requests"][0]["error"]


def test_redirects_are_recorded_in_the_page_record(web: TestWeb, tmp_path: Path) -> None:
    archiver = make_archiver(tmp_path, FakeClock())

    async def main() -> SegmentSummary:
        async with make_fetcher(web.port) as fetcher:
            result = await fetcher.fetch(f"http://{SPECIAL}/redirect/3")
        await archiver.archive(result, f"http://{SPECIAL}/redirect/3", 1)
        return await archiver.close_segment()

    summary = asyncio.run(main())
    assert summary.segment_path is not None
    (record,) = iter_records(summary.segment_path)
    assert record["final_url"] == f"http://{SPECIAL}/" and record["depth"] == 1
    assert [(hop["status"], hop["location"]) for hop in record["redirects"]] == [
        (301, f"http://{SPECIAL}/redirect/2"),
        (302, f"http://{SPECIAL}/redirect/1"),
        (301, f"http://{SPECIAL}/"),
    ]


@pytest.mark.unit
def test_segments_close_on_age_and_restart_counting(tmp_path: Path) -> None:
    clock = FakeClock()
    archiver = make_archiver(tmp_path, clock, segment_pages=1000, segment_seconds=60.0)
    page = FetchResult(
        url="http://h.test/",
        final_url="http://h.test/",
        status=200,
        body=b"<html>hi</html>",
        content_type="text/html",
        started_at=clock.now,
    )

    async def main() -> tuple[SegmentSummary, SegmentSummary, SegmentSummary]:
        clock.now += 120
        assert not archiver.should_close()  # old, but empty: nothing to close
        empty = await archiver.close_segment()
        await archiver.archive(page, "http://h.test/", 0)
        await archiver.archive(page, "http://h.test/", 0)  # same body: deduplicated
        assert not archiver.should_close()
        clock.now += 59
        assert not archiver.should_close()
        clock.now += 1
        assert archiver.should_close()
        first = await archiver.close_segment()
        assert archiver.pending_pages == 0 and not archiver.should_close()
        await archiver.archive(page, "http://h.test/again", 0)
        clock.now += 10
        return empty, first, await archiver.close_segment()

    empty, first, second = asyncio.run(main())
    assert (empty.pages, empty.segment_path) == (0, None)
    assert (first.pages, first.new_blobs, first.bytes, first.stored_bytes) == (2, 1, 30, 15)
    assert first.pages_per_second == 2 / 60
    assert (second.pages, second.new_blobs, second.started) == (1, 0, first.ended)
    assert second.segment_path is not None and second.segment_path != first.segment_path


def test_an_s3_store_gets_one_lookup_per_new_body_and_nothing_for_a_repeat(
        web: TestWeb, tmp_path: Path, s3_bucket: str, s3_endpoint_url: str) -> None:
    store = S3BlobStore(bucket=s3_bucket, name="crawl", codec="zstd", endpoint_url=s3_endpoint_url)
    archiver = Archiver(store, PageIndexWriter(tmp_path / "data", SESSION), clock=FakeClock())

    async def archive(host: str) -> ArchivedPage:
        page, assets = await fetch_page_with_assets(web.port, f"http://{host}/")
        return await archiver.archive(page, f"http://{host}/", 0, assets=assets)

    first = asyncio.run(archive(PLAIN[0]))
    assert first.new_blobs == 5
    # The first miss of a store also asks whether the bucket exists, once.
    assert store.take_request_counts() == {"HeadObject": 5, "HeadBucket": 1, "PutObject": 5}
    second = asyncio.run(archive(PLAIN[1]))
    assert second.new_blobs == 1  # its four assets are the first page's
    # Stored by this crawler already: no request for them (stored_bodies.py).
    assert store.take_request_counts() == {"HeadObject": 1, "PutObject": 1}
