"""Credentials in URLs (`http://user:password@host/`) are never sent and never stored: links
and redirects lose them before they are queued, the fetcher refuses a URL that still has
them, and a seed with them is refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlalchemy import select

from archive_pipelines.captures.segment_ingest import ingest_crawl
from archive_pipelines.catalog.models import PageFetch
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_testkit.recording_servers import Page, RecordingSite
from frontier_service.cli import main
from frontier_service.fetch import Fetcher, FetchSettings
from frontier_service.fetch.result import FetchErrorKind
from frontier_service.service.seeding import BadSeed, checked_seeds
from frontier_service.service.service import CrawlerService
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.captures import capture_primary, open_parts

SECRET = "s3cr3t-pw"


def site_with_credentials_in_links(port: int) -> dict[str, Page]:
    """A start page whose links carry credentials in every way a page can write them."""
    links = [f'<a href="http://user:{SECRET}@127.0.0.1:{port}/absolute">',
             f'<a href="//user:{SECRET}@127.0.0.1:{port}/scheme-relative">',
             f'<a href="http://user:{SECRET}@site.test/named">',
             f'<img src="http://user:{SECRET}@127.0.0.1:{port}/image.png">',
             '<a href="/redirect">']
    html = ("<html><body>" + "".join(links) + "</body></html>").encode()
    done = Page(b"<html>done</html>")
    return {"/": Page(html), "/absolute": done, "/scheme-relative": done, "/named": done,
            "/image.png": Page(b"\x89PNG", headers=(("Content-Type", "image/png"),)),
            "/redirected": done,
            "/redirect": Page(status=302, headers=(
                ("Location", f"http://user:{SECRET}@127.0.0.1:{port}/redirected"),))}


def test_a_crawl_never_sends_nor_stores_credentials_from_links(
        tmp_path: Path, redis_url: str, crawl_name: str) -> None:
    data_dir = tmp_path / "data"
    initialize(Settings(data_dir=data_dir))
    with RecordingSite() as site:
        site.pages.update(site_with_credentials_in_links(site.port))
        settings = crawler_settings(
            data_dir, redis_url, crawl_name, site.port, allowed_domains=(),
            allowed_networks=(f"127.0.0.1:{site.port}",),
            host_map=(("site.test", f"127.0.0.1:{site.port}"),), max_seconds=30.0)
        asyncio.run(CrawlerService(settings, seeds=(f"http://127.0.0.1:{site.port}/",)).run())
    # Every link was followed, without its credentials.
    assert {"/", "/absolute", "/scheme-relative", "/named", "/image.png", "/redirect",
            "/redirected"} <= site.paths()
    assert [r for r in site.requests if r.header("Authorization") is not None] == []
    # Nothing the crawl wrote holds the password: page records, frontier files, journals ...
    # but the bodies, which are the pages as served.
    with open_parts(data_dir) as parts:
        report = ingest_crawl(parts.catalog, capture_primary(parts), parts.layout.root)
        assert report.segments and all(s.outcome == "ingested" and s.rejected == 0
                                       for s in report.segments), report.segments
        with parts.catalog.reading() as tx:
            captures = [tuple(row) for row in tx.session.execute(select(PageFetch.__table__))]
        parts.catalog.engine.dispose()
    urls = {row[PageFetch.__table__.columns.keys().index("url")] for row in captures}
    assert f"http://127.0.0.1:{site.port}/absolute" in urls and "http://site.test/named" in urls
    assert SECRET not in repr(captures)
    blobs = parts.layout.root / "cas"
    holding = [path for path in data_dir.rglob("*") if path.is_file()
               and blobs not in path.parents and SECRET.encode() in path.read_bytes()]
    assert holding == []
    records = [json.loads(line) for path in data_dir.glob("sessions/*/*/*.jsonl")
               for line in path.read_bytes().splitlines()]
    assert len(records) >= 7 and SECRET not in json.dumps(records)


def test_the_fetcher_refuses_a_url_with_credentials_without_sending_it() -> None:
    async def fetch(url: str) -> tuple[FetchErrorKind | None, str | None]:
        async with Fetcher(FetchSettings(retry_backoff_s=(0.01,))) as fetcher:
            result = await fetcher.fetch(url)
        return result.error_kind, result.error

    with RecordingSite({"/": Page(b"hi")}) as site:
        for url in (f"http://user:{SECRET}@127.0.0.1:{site.port}/",
                    f"http://user@127.0.0.1:{site.port}/", f"http://:{SECRET}@127.0.0.1:{site.port}/"):
            kind, error = asyncio.run(fetch(url))
            assert kind is FetchErrorKind.INVALID_URL
            assert error is not None and "carries credentials" in error and SECRET not in error
        assert site.requests == []


@pytest.mark.unit
@pytest.mark.parametrize("seed", [f"http://user:{SECRET}@127.0.0.1:8080/",
                                  "http://user@127.0.0.1:8080/", f"HTTP://:{SECRET}@127.0.0.1:8080"])
def test_a_seed_with_credentials_is_refused_without_repeating_them(tmp_path: Path,
                                                                   seed: str) -> None:
    settings = crawler_settings(tmp_path, "redis://unused", "c", 8080, allowed_domains=())
    with pytest.raises(BadSeed) as refused:
        checked_seeds(settings, ["http://127.0.0.1:8080/ok", seed])
    message = str(refused.value)
    assert "carries credentials (user:password@)" in message and "***@127.0.0.1" in message
    assert SECRET not in message and "user" not in message.split("(")[0]


def test_seed_and_run_refuse_a_seed_with_credentials_and_queue_nothing(
        tmp_path: Path, redis_url: str, crawl_name: str, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    common = ["--data-dir", str(data), "--redis-url", redis_url, "--crawl-name", crawl_name]
    scope = ["--allow-network", "127.0.0.1:8080"]
    bad = f"http://user:{SECRET}@127.0.0.1:8080/"
    assert main([*common, "seed", *scope, "http://127.0.0.1:8080/a", bad]) == 2
    assert main([*common, "run", *scope, "--seed", "http://127.0.0.1:8080/b", "--seed", bad,
                 "--max-seconds", "5", "--metrics-port", "-1", "--loop", "asyncio"]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and all("carries credentials" in line for line in errors), errors
    assert SECRET not in "\n".join(errors)
    # Nothing was queued: the same seeds without the bad one are all new.
    assert main([*common, "seed", *scope, "http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b"]) == 0
    assert "queued 2 URL(s); 0 already seen" in capsys.readouterr().out
