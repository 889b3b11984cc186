"""Two crawls of one site with the same validators key: the second asks conditionally, the
pages that did not change come back 304 and become unchanged captures of the first crawl's
bodies (catalog, ref counts, `captures`, replay, WARC export and import)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from sqlalchemy import select
from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.captures.lookup import find_url, note
from archive_pipelines.catalog import Capture
from archive_pipelines.catalog.models import Blob, PageFetch
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_pipelines.warc.exporter import NOT_MODIFIED_PROFILE
from archive_pipelines.warc.payloads import sha256_digest
from archive_pipelines.warc.warc_info import warc_date
from archive_testkit.testweb import TestWeb, TestWebConfig, host_name, serve_in_background
from archive_testkit.testweb.requestlog import RequestRecord
from archive_testkit.testweb.revisions import last_change
from frontier_service.archiving.validators import KEY_PREFIX
from frontier_service.service.service import CrawlerService, RunReport
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.captures import assert_storage_clean, ingest_all, parts_of
from tests.helpers.cli import run_cli
from tests.helpers.crawls import delete_keys
from tests.helpers.replay import fetch, make_replayer, memento_path, running_replay

SITE = TestWebConfig(seed=31, hosts=1, pages_per_host=12, links_per_page=8,
                     cross_host_fraction=0.0, page_min_bytes=1_500, page_max_bytes=3_000,
                     robots_fraction=1.0, crawl_delay_fraction=0.0, special_fraction=0.0,
                     trap_fraction=0.0, dead_fraction=0.0, garbage_robots_fraction=0.0,
                     huge_robots_hosts=0)
CHANGED = SITE.with_changes(revision=1, changed_fraction=0.3)  # the site a day later
HOST = host_name(SITE, 0)
HOME = f"http://{HOST}/"


@dataclass
class Crawled:
    data_dir: Path
    key: str
    first: list[RequestRecord]  # the test web's log of each crawl
    second: list[RequestRecord]
    reports: list[RunReport]
    started_ms: list[int]  # when each crawl began


def crawl(data_dir: Path, web: TestWeb, *, redis_url: str, name: str, key: str) -> RunReport:
    settings = crawler_settings(data_dir, redis_url, name, web.port, max_depth=3,
                                allowed_domains=(HOST,), per_host_concurrency=4,
                                min_delay_s=0.0, response_time_factor=0.0,
                                validators_key=key)
    try:
        return asyncio.run(CrawlerService(settings, seeds=(HOME,)).run())
    finally:
        delete_keys(redis_url, name)


@pytest.fixture(scope="module")
def crawled(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawled]:
    data_dir = tmp_path_factory.mktemp("revisit") / "data"
    initialize(Settings(data_dir=data_dir))
    key = f"site-{uuid.uuid4().hex[:8]}"
    logs, reports, started = [], [], []
    for number, config in enumerate((SITE, CHANGED)):
        if number:
            time.sleep(1.1)  # a later 14-digit timestamp
        with serve_in_background(config) as web:
            started.append(int(time.time() * 1000))
            reports.append(crawl(data_dir, web, redis_url=redis_url, name=f"{key}-{number}",
                                 key=key))
            logs.append(web.requests_for(HOST))
        with parts_of(data_dir) as parts:
            ingest_all(parts, data_dir)
    yield Crawled(data_dir, key, logs[0], logs[1], reports, started)
    client = redis.Redis.from_url(redis_url)
    client.delete(KEY_PREFIX + key)
    client.close()


def pages(log: list[RequestRecord]) -> list[RequestRecord]:
    return [r for r in log if r.path_qs != "/robots.txt"]


def test_the_second_crawl_asks_conditionally_and_gets_304s_for_unchanged_pages(
        crawled: Crawled) -> None:
    first, second = pages(crawled.first), pages(crawled.second)
    assert first and not any(r.conditional for r in first)
    assert {r.path_qs for r in second} == {r.path_qs for r in first}  # every page again, once
    assert len(second) == len({r.path_qs for r in second}), second
    found = {r.path_qs for r in first if r.status == 200}
    assert {r.path_qs for r in second if r.conditional} == found  # what had validators
    statuses = Counter(r.status for r in second if r.conditional)
    assert statuses[304] and statuses[200], statuses  # some changed, most did not
    assert set(statuses) == {200, 304}
    report = crawled.reports[1].as_metadata()
    assert report["conditional_requests"] == len(found)
    assert report["unchanged"] == statuses[304]
    changed = sorted(r.path_qs for r in second if r.status == 200 and r.conditional)
    assert changed == sorted(p for p in found if last_change(CHANGED, HOST, p.split("?")[0]))
    # Only the changed pages brought bodies (a page under two query strings is one body).
    assert report["new_blobs"] == len({p.split("?")[0] for p in changed})


def page_captures(crawled: Crawled) -> dict[str, list[Capture]]:
    """The page captures of every URL of the site, oldest first."""
    with parts_of(crawled.data_dir) as parts:
        _canonical, found = find_url(parts.catalog, f"http://{HOST}/", prefix=True)
    by_url: dict[str, list[Capture]] = {}
    for capture in sorted(found, key=lambda c: (c.fetched_ms, c.id)):
        if capture.kind == "page" and capture.status_code is not None:
            by_url.setdefault(capture.url, []).append(capture)
    return by_url


def test_unchanged_pages_are_captures_of_the_first_crawls_bodies(crawled: Crawled) -> None:
    by_url = page_captures(crawled)
    statuses = {r.path_qs: r.status for r in crawled.second}
    unchanged = 0
    for url, captures in by_url.items():
        path = url.split(HOST, 1)[1]
        assert len(captures) == 2, (url, captures)  # one capture per crawl
        first, second = captures
        assert first.fetched_ms < crawled.started_ms[1] <= second.fetched_ms
        if statuses[path] == 304:
            unchanged += 1
            assert second.unchanged and second.status_code == 304
            assert second.body_sha256 == first.body_sha256 and second.stored
            assert second.body_size == first.body_size
            assert second.content_type == first.content_type
            assert note(second).startswith("unchanged")
        else:
            assert not second.unchanged
    assert unchanged == sum(status == 304 for status in statuses.values())


def test_ref_counts_and_a_deep_verify_are_exact(crawled: Crawled) -> None:
    with parts_of(crawled.data_dir) as parts:
        assert_storage_clean(parts, crawled.data_dir)
        with parts.catalog.reading() as tx:
            refs = Counter(tx.session.scalars(select(PageFetch.body_blob_id).where(
                PageFetch.body_blob_id.is_not(None))))
    unchanged_bodies = {c.body_sha256 for cs in page_captures(crawled).values() for c in cs
                        if c.unchanged}
    assert unchanged_bodies
    with parts_of(crawled.data_dir) as parts, parts.catalog.reading() as tx:
        for sha in unchanged_bodies:
            blob = tx.session.scalar(select(Blob).where(Blob.sha256 == sha))
            assert blob is not None and blob.ref_count == refs[blob.id] >= 2


def test_captures_shows_an_unchanged_capture(crawled: Crawled) -> None:
    url = next(url for url, cs in page_captures(crawled).items() if cs[1].unchanged)
    run = run_cli("--data-dir", str(crawled.data_dir), "captures", url)
    assert run.returncode == 0, run.stderr
    assert "304" in run.stdout and "unchanged" in run.stdout
    listed = run_cli("--data-dir", str(crawled.data_dir), "captures", "--json", url)
    rows = json.loads(listed.stdout)["captures"]
    assert [row["unchanged"] for row in rows] == [True, False]  # newest first


def test_replay_of_the_second_crawl_shows_the_earlier_body(crawled: Crawled) -> None:
    first, second = page_captures(crawled)[HOME]
    assert second.unchanged  # the home page never changes (revisions.last_change)
    with parts_of(crawled.data_dir) as parts, \
            running_replay(make_replayer(crawled.data_dir, parts.catalog)) as replay:
        earlier = fetch(replay.port, memento_path(first, "id_"))
        later = fetch(replay.port, memento_path(second, "id_"))
        shown = fetch(replay.port, memento_path(second))
    assert earlier.status == later.status == 200
    assert later.body == earlier.body
    assert later.headers["Content-Type"] == earlier.headers["Content-Type"] == \
        "text/html; charset=utf-8"
    assert later.headers["Memento-Datetime"] != earlier.headers["Memento-Datetime"]
    assert shown.status == 200 and b"<a " in shown.body


def test_export_writes_a_server_not_modified_revisit_and_import_keeps_it(
        crawled: Crawled, tmp_path: Path) -> None:
    warc = tmp_path / "site.warc.gz"
    run = run_cli("--data-dir", str(crawled.data_dir), "export-warc", str(warc))
    assert run.returncode == 0, run.stderr
    by_url = page_captures(crawled)
    unchanged = {url: cs for url, cs in by_url.items() if cs[1].unchanged}
    with open(warc, "rb") as handle:
        revisits = {r.rec_headers.get_header("WARC-Target-URI"): r
                    for r in ArchiveIterator(handle, check_digests="raise")
                    if r.rec_headers.get_header("WARC-Profile") == NOT_MODIFIED_PROFILE}
    assert unchanged and set(revisits) == set(unchanged)
    for url, (first, second) in unchanged.items():
        record = revisits[url]
        assert record.rec_type == "revisit"
        assert record.http_headers.get_statuscode() == "304"
        assert record.rec_headers.get_header("WARC-Date") == warc_date(second.fetched_ms)
        assert record.rec_headers.get_header("WARC-Refers-To-Target-URI") == first.url
        assert record.rec_headers.get_header("WARC-Refers-To-Date") == warc_date(first.fetched_ms)
        assert record.rec_headers.get_header("WARC-Payload-Digest") == sha256_digest(
            first.body_sha256 or "")
    data = tmp_path / "imported"
    initialize(Settings(data_dir=data))
    imported = run_cli("--data-dir", str(data), "import-warc", "--json", str(warc))
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["unresolved_revisits"] == 0
    with parts_of(data) as parts:
        for url, (first, second) in unchanged.items():
            _canonical, found = find_url(parts.catalog, url)
            again = {c.fetched_ms: c for c in found}
            assert again[second.fetched_ms].unchanged
            assert again[second.fetched_ms].body_sha256 == first.body_sha256
            assert not again[first.fetched_ms].unchanged
        assert_storage_clean(parts, data)
