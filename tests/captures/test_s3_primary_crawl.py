"""Crawls onto an S3 primary (moto_server): bodies and segments go to the bucket, ingest-crawl
and compaction read them from there, on this machine or another sharing the catalog; an
endpoint that fails mid-crawl leaves nothing recorded that the bucket lacks, and a rerun
converges."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import boto3
import pytest
from sqlalchemy import select

from archive_pipelines.captures.compaction import compact_sessions
from archive_pipelines.captures.lookup import find_url
from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.captures.segment_source import segment_source
from archive_pipelines.catalog.models import Blob, PageFetch
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import StorageParts, open_storage
from archive_testkit.servers import LocalMotoServer
from archive_testkit.servers.faulty_http import FaultyProxy
from archive_testkit.servers.tcp_cut import CuttableTcpProxy
from archive_testkit.testweb import RequestRecord, TestWeb
from frontier_service.service.service import STORE_FAILURE, RunReport
from tests.helpers.crawls import refetch, unique_crawl_name
from tests.helpers.s3_crawls import crawl_onto, local_segments, run_cli, segment_keys
from tests.helpers.s3_primary import s3_primary_data_dir


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def answered(requests: list[RequestRecord]) -> set[tuple[str, str]]:
    """(host, path and query) of every page or asset request the web answered."""
    return {(r.host, r.path_qs) for r in requests if r.status != 0 and r.path_qs != "/robots.txt"}


def assert_bodies_from_the_bucket(parts: StorageParts, web: TestWeb,
                                  asked: set[tuple[str, str]]) -> None:
    """Every answered URL is a capture whose body, read from the bucket, is the web's bytes."""
    assert len(asked) > 20
    for host, path_qs in sorted(asked):
        url = f"http://{host}{path_qs}"
        _canonical, found = find_url(parts.catalog, url)
        fetched = [c for c in found if c.kind in ("page", "request") and c.status_code]
        assert fetched, f"{url}: no capture"
        capture = fetched[0]
        status, body = refetch(web.port, host, path_qs)
        assert capture.status_code == status, url
        assert capture.body_sha256 is not None and capture.stored, url
        with parts.primary.store.open(capture.body_sha256) as handle:
            assert sha(handle.read()) == capture.body_sha256 == sha(body), url


def recorded_bodies(parts: StorageParts) -> set[str]:
    with parts.catalog.reading() as tx:
        return set(tx.session.scalars(
            select(Blob.sha256).join(PageFetch, PageFetch.body_blob_id == Blob.id)))


def ingest(data_dir: Path) -> dict[str, int]:
    result = run_cli(data_dir, "ingest-crawl", "--all", "--json")
    assert result.returncode == 0, result.stderr + result.stdout
    totals: dict[str, int] = json.loads(result.stdout)
    assert (totals["missing_bodies"], totals["segments_failed"], totals["rejected"]) == (0, 0, 0)
    return totals


@pytest.fixture
def crawl_name(redis_url: str) -> Iterator[str]:
    with unique_crawl_name(redis_url, "s3c") as name:
        yield name


def listing(data_dir: Path, session_id: str) -> dict[int, object]:
    result = run_cli(data_dir, "captures", "--session", session_id, "--requests", "--json",
                     "--records")
    assert result.returncode == 0, result.stderr
    return {c["id"]: (c["url"], c["status_code"], c["body_sha256"], c["fetched_ms"],
                      c["record"]) for c in json.loads(result.stdout)["captures"]}


def test_a_crawl_onto_s3_is_ingested_looked_up_and_compacted(
        captures_web: TestWeb, redis_url: str, s3_endpoint_url: str, s3_bucket: str,
        crawl_name: str, tmp_path: Path) -> None:
    settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=s3_endpoint_url,
                                   bucket=s3_bucket)
    data = settings.data_dir
    captures_web.log.clear()
    report = crawl_onto(settings, captures_web, redis_url, crawl_name)
    asked = answered(captures_web.log.records())
    assert report.failure == "" and report.segments >= 2
    # Every segment went to the bucket; the local copies (a spool) are gone.
    assert local_segments(data) == []
    assert len(segment_keys(s3_endpoint_url, s3_bucket)) == report.segments
    assert [p for p in (data / "cas").rglob("*") if p.is_file()] == []  # bodies: the bucket

    totals = ingest(data)
    assert totals["segments_ingested"] == report.segments
    parts = open_storage(settings)
    assert_bodies_from_the_bucket(parts, captures_web, asked)
    url = f"http://{sorted(asked)[0][0]}/"
    looked_up = run_cli(data, "captures", url, "--json")
    assert looked_up.returncode == 0, looked_up.stderr
    assert json.loads(looked_up.stdout)["captures"]

    # Compaction reads the segments from the bucket; lookups and records stay the same.
    before = listing(data, report.session_id)
    assert before and all(not isinstance(row, dict) for row in before.values())
    assert all(row[4]["session_id"] == report.session_id  # type: ignore[index]
               for row in before.values())  # each record read from its segment object
    compacted = run_cli(data, "compact-crawls", "--older-than", "0", "--json")
    assert compacted.returncode == 0, compacted.stderr
    [done] = json.loads(compacted.stdout)["sessions"]
    assert (done["outcome"], done["removed_files"]) == ("compacted", report.segments), done
    assert segment_keys(s3_endpoint_url, s3_bucket) == []
    assert list((data / "sessions" / "compacted").iterdir()) == []  # the spool is emptied
    assert listing(data, report.session_id) == before
    assert ingest(data)["segments_ingested"] == 0


def test_a_segment_crawled_by_one_data_dir_is_ingested_by_another(
        captures_web: TestWeb, redis_url: str, s3_endpoint_url: str, s3_bucket: str,
        postgres_url: str, crawl_name: str, tmp_path: Path) -> None:
    machines = [s3_primary_data_dir(tmp_path / name, endpoint_url=s3_endpoint_url,
                                    bucket=s3_bucket, catalog_url=postgres_url)
                for name in ("a", "b")]
    captures_web.log.clear()
    report = crawl_onto(machines[0], captures_web, redis_url, crawl_name)
    assert report.failure == "" and report.segments >= 2
    asked = answered(captures_web.log.records())

    assert ingest(machines[1].data_dir)["segments_ingested"] == report.segments
    parts = open_storage(machines[1])
    assert_bodies_from_the_bucket(parts, captures_web, asked)
    assert ingest(machines[0].data_dir)["segments_ingested"] == 0  # one catalog, one ledger

    # B holds no lock of A's crawler: a session whose newest segment object is younger than
    # the compaction age is left alone, even when its last ingested fetch is older.
    sid = report.session_id
    with parts.catalog.reading() as tx:
        row = tx.captures.crawl_session(sid)
    assert row is not None and row.ended_at is not None
    time.sleep(max(0.0, row.ended_at.timestamp() + 3 - time.time()))
    source = segment_source(parts.primary.store, machines[1].data_dir)
    [*_, last], _skipped = source.find(sid)
    late = last.relative.replace(".jsonl", "9.jsonl")  # a segment uploaded just now
    spooled = tmp_path / "late.jsonl"
    spooled.write_bytes(source.read(last.relative).data)
    source.store_file(late, spooled)
    primary = CapturePrimary(parts.primary.store, parts.primary.store_id, parts.views.farm)
    left = compact_sessions(parts.catalog, primary, machines[1].data_dir, session_id=sid,
                            older_than=timedelta(0), now=row.ended_at + timedelta(seconds=1))
    [skipped] = left.sessions
    assert skipped.outcome == "skipped" and "a crawler may still be writing" in skipped.problems[0]
    assert source.remove(late)
    done = compact_sessions(parts.catalog, primary, machines[1].data_dir, session_id=sid,
                            older_than=timedelta(0))
    assert [s.outcome for s in done.sessions] == ["compacted"]
    assert segment_keys(s3_endpoint_url, s3_bucket) == []


def _fail_after_puts(proxy: FaultyProxy, puts: int, done: threading.Event) -> None:
    """Make the endpoint fail every request once `puts` PUTs went through."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not done.is_set():
        if sum(r.method == "PUT" for r in proxy.requests) >= puts:
            proxy.fail(503, "ServiceUnavailable")
            return
        time.sleep(0.01)


def test_the_endpoint_failing_mid_crawl_records_nothing_the_bucket_lacks_and_a_rerun_converges(
        captures_web: TestWeb, redis_url: str, crawl_name: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_MAX_ATTEMPTS", "1"),
                        ("ARCHIVE_S3_CONNECT_TIMEOUT", "1"), ("ARCHIVE_S3_READ_TIMEOUT", "2")):
        monkeypatch.setenv(name, value)
    moto = LocalMotoServer().start()
    try:
        boto3.client("s3", endpoint_url=moto.url, region_name="us-east-1").create_bucket(
            Bucket="crawl")
        with FaultyProxy(moto.url) as proxy:
            settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=proxy.url,
                                           bucket="crawl")
            first = _crawl_with(settings, captures_web, redis_url, crawl_name,
                                fault=lambda done: _fail_after_puts(proxy, 25, done))
            assert first.failure.startswith(STORE_FAILURE), first.failure
            assert local_segments(settings.data_dir)  # the last segment waits in the spool
        # The endpoint is back (the proxy in front of it gone).
        settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=moto.url, bucket="crawl")
        _recovers(settings, captures_web, redis_url, crawl_name)
    finally:
        moto.stop()


def _crawl_with(settings: Settings, web: TestWeb, redis_url: str, crawl_name: str, *,
                fault: Callable[[threading.Event], None]) -> RunReport:
    """Crawl while `fault` runs on a thread (it injects the endpoint's failure; the event
    tells it the crawl is over)."""
    web.log.clear()
    done = threading.Event()
    injector = threading.Thread(target=fault, args=(done,))
    injector.start()
    try:
        return crawl_onto(settings, web, redis_url, crawl_name)
    finally:
        done.set()
        injector.join()


def _recovers(settings: Settings, web: TestWeb, redis_url: str, crawl_name: str) -> None:
    """With the endpoint back: ingest-crawl uploads the spooled segments first, and every
    body the catalog records is in the bucket; the crawl run again finishes, and all its
    bodies read back from the bucket."""
    ingest(settings.data_dir)
    assert local_segments(settings.data_dir) == []
    parts = open_storage(settings)
    try:
        recorded = recorded_bodies(parts)
        assert recorded and all(parts.primary.store.exists(body) for body in recorded)
        second = crawl_onto(settings, web, redis_url, crawl_name)
        assert second.failure == ""
        ingest(settings.data_dir)
        assert_bodies_from_the_bucket(parts, web, answered(web.log.records()))
        assert all(parts.primary.store.exists(body) for body in recorded_bodies(parts))
    finally:
        parts.close()
        parts.catalog.engine.dispose()


def test_the_crawler_puts_a_new_body_with_one_request(s3_endpoint_url: str, s3_bucket: str,
                                                      tmp_path: Path) -> None:
    from frontier_service.service.crawler_parts import crawl_store

    settings: Settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=s3_endpoint_url,
                                             bucket=s3_bucket)
    store = crawl_store(settings.primary_store, settings.data_dir)
    bodies = [f"body {n}".encode() * 100 for n in range(20)]
    assert all(store.put_bytes(body).created for body in bodies)
    counts = store.take_request_counts()  # type: ignore[attr-defined]
    assert counts == {"PutObject": 20}, counts
    assert not any(store.put_bytes(body).created for body in bodies[:5])  # refused: present
    assert store.take_request_counts() == {"PutObject": 5}  # type: ignore[attr-defined]


def test_a_body_the_crawler_stored_before_costs_no_request_again(
        s3_endpoint_url: str, s3_bucket: str, tmp_path: Path) -> None:
    from frontier_service.archiving.archiver import _put_deduplicated
    from frontier_service.archiving.stored_bodies import StoredBodies
    from frontier_service.service.crawler_parts import crawl_store

    settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=s3_endpoint_url,
                                   bucket=s3_bucket)
    store = crawl_store(settings.primary_store, settings.data_dir)
    stored = StoredBodies()
    bodies = [f"shared script {n}".encode() * 50 for n in range(10)]

    first = [_put_deduplicated(store, body, stored) for body in bodies * 3]

    assert [put.created for put in first] == [True] * 10 + [False] * 20
    assert store.take_request_counts() == {"PutObject": 10}  # type: ignore[attr-defined]
    forgetful = StoredBodies()  # another process: asks the bucket, which refuses (412)
    assert not any(_put_deduplicated(store, body, forgetful).created for body in bodies)
    assert store.take_request_counts() == {"PutObject": 10}  # type: ignore[attr-defined]


def _cut_after_objects(proxy: CuttableTcpProxy, moto_url: str, objects: int,
                       done: threading.Event) -> None:
    """Stop the endpoint (connections refused, open ones closed) once the bucket holds
    `objects` objects."""
    client = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not done.is_set():
        if client.list_objects_v2(Bucket="crawl").get("KeyCount", 0) >= objects:
            proxy.cut()
            return
        time.sleep(0.02)


def test_the_endpoint_stopped_mid_crawl_and_back_on_the_same_address_converges(
        captures_web: TestWeb, redis_url: str, crawl_name: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The S3 endpoint goes away (its port refuses connections) mid-crawl, then comes back
    at the same address with everything it held: the crawl stops with the store's error,
    nothing recorded is missing from the bucket, and the same commands run again finish."""
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_MAX_ATTEMPTS", "1"),
                        ("ARCHIVE_S3_CONNECT_TIMEOUT", "1"), ("ARCHIVE_S3_READ_TIMEOUT", "2")):
        monkeypatch.setenv(name, value)
    moto = LocalMotoServer().start()
    proxy = CuttableTcpProxy(moto.url).start()
    try:
        boto3.client("s3", endpoint_url=moto.url, region_name="us-east-1").create_bucket(
            Bucket="crawl")
        settings = s3_primary_data_dir(tmp_path / "data", endpoint_url=proxy.url,
                                       bucket="crawl")
        first = _crawl_with(settings, captures_web, redis_url, crawl_name,
                            fault=lambda done: _cut_after_objects(proxy, moto.url, 20, done))
        assert first.failure.startswith(STORE_FAILURE), first.failure

        proxy.restore()  # back, same port, same buckets
        _recovers(settings, captures_web, redis_url, crawl_name)
    finally:
        proxy.stop()
        moto.stop()
