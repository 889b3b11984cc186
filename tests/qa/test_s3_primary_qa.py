"""Browser capture and `captures qa` on a data dir whose primary is an S3 bucket (moto_server)
and whose catalog is on PostgreSQL: one `--browser always` crawl of the test kit's JavaScript
page that fetches JSON (its screenshot and DOM go to the bucket, nothing under the data dir's
`cas/`), ingested by the CLI, then the day's `captures` asset run (it samples the capture for
QA). `captures URL --screenshot/--dom` write the bucket's bytes; `captures qa` replays from
the bucket, here and on another data dir sharing the catalog and bucket, scores the capture 1
and records the check; with the screenshot's object gone it records why and exits 1, as on a
local primary; with the endpoint unreachable it records nothing and exits 2."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import dagster as dg
import pytest

from archive_pipelines.assets.capture_qa import capture_qa
from archive_pipelines.assets.captures import captures
from archive_pipelines.blobstore.s3 import S3BlobStore
from archive_pipelines.datadir import initialize
from archive_pipelines.qa.sampling import check_with_settings
from archive_pipelines.replay.timestamps import timestamp_of
from archive_pipelines.resources import CatalogResource, SettingsResource, StorageResource
from archive_pipelines.settings import Settings, load_settings
from archive_pipelines.storage.assembly import open_storage
from archive_testkit.servers import create_database, drop_database
from archive_testkit.testweb import serve_in_background
from archive_testkit.testweb.js_pages import FETCHED
from frontier_service.service.service import CrawlerService
from tests.frontier_service.pages.browser_crawls import HOST, WEB
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.crawls import delete_keys
from tests.helpers.s3_crawls import bucket_keys, run_cli, segment_keys
from tests.helpers.s3_primary import s3_primary_data_dir
from tests.qa.qa_crawls import browser_page, page_url

PREFIX = "archive"


@dataclass(frozen=True)
class S3BrowserCrawl:
    settings: Settings
    endpoint_url: str
    bucket: str
    sampled: dict[str, Any]  # the `captures` asset's metadata, its run after the ingest
    qa_check: dg.AssetCheckEvaluation  # `capture_qa` evaluated in that run

    def client(self) -> Any:
        return boto3.client("s3", endpoint_url=self.endpoint_url, region_name="us-east-1")

    def key(self, sha256: str) -> str:
        return f"{PREFIX}/sha256/{sha256[:2]}/{sha256[2:4]}/{sha256}"


def crawled_and_ingested(settings: Settings, redis_url: str) -> None:
    """FETCHED crawled with `--browser always` (its own page only) onto `settings`' primary,
    every segment ingested with `ingest-crawl`."""
    name = f"s3qa-{uuid.uuid4().hex[:10]}"
    with serve_in_background(WEB) as web:
        crawler = crawler_settings(
            settings.data_dir, redis_url, name, web.port, allowed_domains=(HOST,), max_depth=0,
            min_delay_s=0.0, response_time_factor=0.0, per_host_concurrency=2,
            browser_contexts=1, exit_when_idle_s=1.0, max_seconds=120.0, browser="always")
        try:
            report = asyncio.run(CrawlerService(crawler, seeds=(page_url(FETCHED),),
                                                store_settings=settings.primary_store).run())
        finally:
            delete_keys(redis_url, name)
    assert report.failure == "" and report.segments >= 1, report
    ingested = run_cli(settings.data_dir, "ingest-crawl", "--all", "--json")
    assert ingested.returncode == 0, ingested.stderr + ingested.stdout
    totals = json.loads(ingested.stdout)
    assert totals["segments_ingested"] == report.segments and totals["missing_bodies"] == 0


@pytest.fixture(scope="module")
def s3_crawl(redis_url: str, s3_endpoint_url: str, postgres_server_url: str,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3BrowserCrawl]:
    """The crawl onto a fresh bucket (its credentials in the environment) with its catalog on
    a fresh PostgreSQL database (another data dir can share both), then the day's `captures`
    asset run, which samples the capture for QA."""
    database = f"t_{uuid.uuid4().hex[:12]}"
    catalog_url = create_database(postgres_server_url, database)
    with pytest.MonkeyPatch.context() as env:
        for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                            ("AWS_DEFAULT_REGION", "us-east-1")):
            env.setenv(name, value)
        env.delenv("DATABASE_URL", raising=False)  # the archive.toml's catalog, for Dagster too
        bucket = f"qa-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", endpoint_url=s3_endpoint_url, region_name="us-east-1").create_bucket(
            Bucket=bucket)
        settings = s3_primary_data_dir(tmp_path_factory.mktemp("s3qa") / "data",
                                       endpoint_url=s3_endpoint_url, bucket=bucket, prefix=PREFIX,
                                       catalog_url=catalog_url)
        try:
            crawled_and_ingested(settings, redis_url)
            [day] = {key.split("/")[1] for key in segment_keys(s3_endpoint_url, bucket, PREFIX)}
            sampled, qa_check = sampled_by_the_asset(settings.data_dir, day)
            yield S3BrowserCrawl(settings, s3_endpoint_url, bucket, sampled, qa_check)
        finally:
            drop_database(postgres_server_url, database)


def sampled_by_the_asset(data: Path, day: str) -> tuple[dict[str, Any], dg.AssetCheckEvaluation]:
    """The day's `captures` materialized with `capture_qa` (nothing left to ingest: QA
    samples the day's unchecked browser captures, `qa.sample_pages` of them)."""
    settings = SettingsResource(data_dir=str(data))
    catalog = CatalogResource(settings=settings)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("crawl_days", [day])
        result = dg.materialize(
            [captures, capture_qa], partition_key=day, instance=instance, raise_on_error=False,
            resources={"settings": settings, "catalog": catalog,
                       "storage": StorageResource(catalog=catalog)})
        assert result.success
        [meta] = [{k: v.value for k, v in m.metadata.items()}
                  for m in result.asset_materializations_for_node("captures")]
        [check] = result.get_asset_check_evaluations()
    return meta, check


@pytest.fixture(scope="module")
def local_crawl(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The same crawl onto a local primary (the default profile), to hold S3 against."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("localqa") / "data")
    initialize(settings)
    crawled_and_ingested(settings, redis_url)
    return settings


def test_the_screenshot_and_dom_are_objects_in_the_bucket_written_out_byte_equal(
        s3_crawl: S3BrowserCrawl, tmp_path: Path) -> None:
    data = s3_crawl.settings.data_dir
    assert [p for p in (data / "cas").rglob("*") if p.is_file()] == []  # blobs: the bucket
    parts = open_storage(s3_crawl.settings)
    page = browser_page(parts.catalog, FETCHED)
    listed = json.loads(run_cli(data, "captures", page_url(FETCHED), "--json").stdout)
    [row] = [row for row in listed["captures"] if row["id"] == page.id]
    keys = set(bucket_keys(s3_crawl.endpoint_url, s3_crawl.bucket, PREFIX))
    client = s3_crawl.client()
    for kind, option, magic in (("screenshot", "--screenshot", b"\x89PNG"),
                                ("dom", "--dom", b"<")):
        sha = row[kind]["sha256"]
        assert s3_crawl.key(sha) in keys, kind
        in_bucket = client.get_object(Bucket=s3_crawl.bucket, Key=s3_crawl.key(sha))["Body"].read()
        assert hashlib.sha256(in_bucket).hexdigest() == sha
        out = tmp_path / f"{kind}.out"
        ran = run_cli(data, "captures", page_url(FETCHED), option, str(out))
        assert ran.returncode == 0, ran.stderr
        assert out.read_bytes() == in_bucket and in_bucket.lstrip().startswith(magic), kind
    assert page.screenshot_sha256 == row["screenshot"]["sha256"]


def test_the_captures_asset_samples_the_browser_capture_on_s3(s3_crawl: S3BrowserCrawl) -> None:
    meta, check = s3_crawl.sampled, s3_crawl.qa_check
    assert meta["run_pages"] == 0 and meta["day_pages"] >= 1  # ingest-crawl took them
    assert meta["qa_checked"] == 1 and meta["qa_below_threshold"] == 0, meta
    assert meta["qa_median_score"] == 1.0 and "qa_error" not in meta
    assert check.passed and check.metadata["below_threshold"].value == 0


def test_qa_replays_from_the_bucket_scores_the_capture_high_and_records_the_check(
        s3_crawl: S3BrowserCrawl) -> None:
    data = s3_crawl.settings.data_dir
    page = browser_page(open_storage(s3_crawl.settings).catalog, FETCHED)
    ran = run_cli(data, "captures", "qa", page_url(FETCHED), "--at", timestamp_of(page.fetched_ms))
    assert ran.returncode == 0, ran.stderr + ran.stdout
    lines = ran.stdout.splitlines()
    assert lines[0] == f"{page.url} captured at {timestamp_of(page.fetched_ms)} (capture {page.id})"
    assert "  score      1.0000" in lines, ran.stdout
    assert "  resources  5/5 replayed from the archive" in lines, ran.stdout
    assert "  leaks      0" in lines and not any("problem" in line for line in lines)
    checks = open_storage(s3_crawl.settings).catalog.qa.latest([page.id])
    assert checks[page.id].check.score == 1.0 and checks[page.id].check.error is None
    assert [p for p in (data / "cas").rglob("*") if p.is_file()] == []  # read, not mirrored


@pytest.mark.parametrize("primary", ["s3", "local"])
def test_qa_of_a_capture_whose_screenshot_is_missing_exits_1_saying_so(
        primary: str, request: pytest.FixtureRequest) -> None:
    """The same on a local primary (a file deleted) as on S3 (an object deleted): the check
    is recorded with score 0 and the reason, and the command exits 1 naming the blob."""
    if primary == "s3":
        s3_crawl: S3BrowserCrawl = request.getfixturevalue("s3_crawl")
        settings = s3_crawl.settings
    else:
        settings = request.getfixturevalue("local_crawl")
    parts = open_storage(settings)
    page = browser_page(parts.catalog, FETCHED)
    sha = page.screenshot_sha256
    assert sha is not None
    if primary == "s3":
        client, key = s3_crawl.client(), s3_crawl.key(sha)
        kept = client.get_object(Bucket=s3_crawl.bucket, Key=key)["Body"].read()
        client.delete_object(Bucket=s3_crawl.bucket, Key=key)
    else:
        with parts.primary.store.open(sha) as handle:
            kept = handle.read()
        assert parts.primary.store.delete(sha)
    try:
        ran = run_cli(settings.data_dir, "captures", "qa", page_url(FETCHED))
    finally:
        if primary == "s3":
            client.put_object(Bucket=s3_crawl.bucket, Key=key, Body=kept)
        else:
            parts.primary.store.put_bytes(kept)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert ran.stderr.startswith(f"archive-pipelines: error: capture {page.id} of {page.url} "
                                 "compared with nothing: the capture-time screenshot "
                                 f"(sha256:{sha}) is missing from the store"), ran.stderr
    assert "  score      0.0000  (under the threshold 0.9)" in ran.stdout.splitlines()
    check = parts.catalog.qa.latest([page.id])[page.id].check
    assert check.score == 0.0 and "is missing from the store" in (check.error or "")


def test_qa_on_another_data_dir_sharing_the_catalog_and_bucket_replays_from_the_bucket(
        s3_crawl: S3BrowserCrawl, tmp_path: Path) -> None:
    """A machine that did not crawl (its own data dir, nothing of the crawl on its disk)
    checks the capture; the crawling machine sees the check."""
    crawled = s3_crawl.settings
    other = s3_primary_data_dir(tmp_path / "other", endpoint_url=s3_crawl.endpoint_url,
                                bucket=s3_crawl.bucket, prefix=PREFIX,
                                catalog_url=crawled.catalog_url)
    ran = run_cli(other.data_dir, "captures", "qa", page_url(FETCHED))
    assert ran.returncode == 0, ran.stderr + ran.stdout
    assert "  score      1.0000" in ran.stdout.splitlines(), ran.stdout
    assert list(other.data_dir.glob("sessions/*/*/*.jsonl")) == []
    page = browser_page(open_storage(crawled).catalog, FETCHED)
    listed = run_cli(crawled.data_dir, "captures", page_url(FETCHED))
    [qa_line] = [line for line in listed.stdout.splitlines() if "QA score" in line]
    assert "1.000  (pixels 1.000, resources 5/5, leaks 0; checked " in qa_line
    assert open_storage(crawled).catalog.qa.latest([page.id])[page.id].check.score == 1.0


def test_a_check_reads_each_body_with_one_get_and_writes_nothing_to_the_bucket(
        s3_crawl: S3BrowserCrawl) -> None:
    """What a check costs on S3: the screenshot and each replayed resource's body one GET,
    and the few reads of records from the crawl's segment object (measured: 7 GETs for 6
    bodies); no PUT (the check goes to the catalog only)."""
    parts = open_storage(s3_crawl.settings)
    store = parts.primary.store
    assert isinstance(store, S3BlobStore)
    page = browser_page(parts.catalog, FETCHED)
    store.take_request_counts()
    [checked] = check_with_settings([page.id], catalog=parts.catalog, store=store,
                                    settings=s3_crawl.settings)
    counts = store.take_request_counts()
    assert checked.check.score == 1.0 and checked.unreadable is None
    bodies = 1 + checked.check.resources_replayed  # the screenshot, the replayed resources
    print(f"one check on S3: {counts} for {bodies} bodies")
    assert counts.get("PutObject", 0) == 0
    assert bodies <= counts.get("GetObject", 0) + counts.get("HeadObject", 0) <= 2 * bodies


def test_qa_with_the_store_unreachable_records_nothing_and_exits_2_saying_so(
        s3_crawl: S3BrowserCrawl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An outage says nothing of the capture: no check is recorded (a score of 0 would fail
    `capture_qa` for the store's sake), and the command fails naming the store's error."""
    for name, value in (("AWS_MAX_ATTEMPTS", "1"), ("ARCHIVE_S3_CONNECT_TIMEOUT", "1"),
                        ("ARCHIVE_S3_READ_TIMEOUT", "2")):
        monkeypatch.setenv(name, value)
    data = tmp_path / "data"
    shutil.copytree(s3_crawl.settings.data_dir, data, symlinks=True)
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    toml = data / "archive.toml"
    toml.write_text(toml.read_text().replace(s3_crawl.endpoint_url, closed))
    settings = load_settings(data, environ={})
    catalog = open_storage(settings).catalog
    page = browser_page(catalog, FETCHED)
    before = catalog.qa.latest([page.id])
    ran = run_cli(data, "captures", "qa", page_url(FETCHED))
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert (f"capture {page.id} of {page.url} not checked, nothing recorded: the store failed "
            f"reading its capture-time screenshot (sha256:{page.screenshot_sha256})") in ran.stderr
    assert "score" not in ran.stdout
    assert catalog.qa.latest([page.id]) == before
