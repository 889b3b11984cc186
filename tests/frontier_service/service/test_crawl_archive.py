"""The same crawl, seen from what it left behind: frontier, visited store, blobs, index, Dagster."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
from urllib.parse import urlsplit

import dagster as dg

from archive_pipelines.blobstore import open_store
from archive_pipelines.canonical_urls import try_canonical_url_and_domain
from archive_testkit.testweb import absolute_links, is_page_path
from frontier_service.archiving import iter_records
from frontier_service.archiving.events import CRAWL_SEGMENTS
from frontier_service.service.crawler_parts import DEFAULT_STORE, open_frontier
from tests.frontier_service.service.web import ALIVE, WEB
from tests.helpers.crawls import Crawl


def frontier_contents(crawl: Crawl) -> tuple[dict[str, list[str]], set[str], list[bool]]:
    """Every URL in every domain file, the excluded domains, and whether each URL was visited."""

    async def read() -> tuple[dict[str, list[str]], set[str], list[bool]]:
        async with open_frontier(crawl.settings) as (frontier, _):
            prefix = frontier.state.keys.domain_prefix
            domains = [key.decode()[len(prefix):]
                       async for key in frontier.redis.scan_iter(match=prefix + "*")]
            urls = {d: [r.url for r in frontier.files.read_from(d, 0, 1_000_000)[0]] for d in domains}
            excluded = {d for d in domains if (await frontier.meta.info(d)).excluded}
            flat = [u for d in domains if d not in excluded for u in urls[d]]
            visits = await frontier.visited.get_many(flat)
            stats = await frontier.stats()
            assert stats.ready_domains == 0 and stats.leased_domains == 0
        return urls, excluded, [v is not None for v in visits]

    return asyncio.run(read())


def test_no_frontier_url_is_lost(crawl: Crawl) -> None:
    urls, excluded, visited = frontier_contents(crawl)
    assert sum(map(len, urls.values())) > 400
    assert all(visited), f"{visited.count(False)} queued URLs were never visited"
    assert excluded  # the dead hosts
    assert all(d.split(":")[0] not in ALIVE for d in excluded)


def test_every_discovered_link_was_queued(crawl: Crawl) -> None:
    urls, _, _ = frontier_contents(crawl)
    queued = {u for found in urls.values() for u in found}
    checked = 0
    for record in iter_records(crawl.settings.data_dir / "sessions"):
        parts = urlsplit(record["page_url"])
        response = record["requests"][0]["response"] if record["requests"] else None
        if (record["depth"] >= crawl.settings.max_depth or parts.hostname not in ALIVE
                or response is None or response["status_code"] != 200
                or not is_page_path(WEB, parts.path)):
            continue
        for link in absolute_links(WEB, parts.hostname, parts.path):
            found = try_canonical_url_and_domain(link)
            if found is not None:
                assert found[0] in queued, (record["page_url"], link)
                checked += 1
    assert checked > 1000


def test_bodies_and_index_records_are_written_and_readable(crawl: Crawl) -> None:
    store = open_store(DEFAULT_STORE, crawl.settings.data_dir)
    records = list(iter_records(crawl.settings.data_dir / "sessions"))
    fetched = [r for r in records if r["requests"]]
    assert len(fetched) == crawl.report.metrics.pages
    skipped = [r for r in records if not r["requests"]]
    assert any(r["error"] == "disallowed by robots.txt" for r in skipped)
    hashes = {r["requests"][0]["response"]["body_hash"]: r["requests"][0]["response"]["body_size"]
              for r in fetched if r["requests"][0]["response"] and r["requests"][0]["response"]["body_hash"]}
    assert len(hashes) > 200
    for body_hash, size in hashes.items():
        sha256 = body_hash.removeprefix("sha256:")
        with store.open(sha256) as blob:
            data = blob.read()
        assert hashlib.sha256(data).hexdigest() == sha256 and len(data) == size
    redirects = [r for r in fetched if r["redirects"]]
    assert redirects and all(r["redirects"][0]["status"] in (301, 302) for r in redirects)


def test_each_segment_is_one_crawl_segments_materialization(crawl: Crawl) -> None:
    with dg.DagsterInstance.from_config(str(crawl.dagster_home)) as instance:
        events = instance.fetch_materializations(CRAWL_SEGMENTS, limit=1000).records
        materializations = [e.asset_materialization for e in events if e.asset_materialization]
    assert len(materializations) == crawl.report.segments >= 2
    today = dt.datetime.now(dt.UTC).date().isoformat()
    assert {m.partition for m in materializations} <= {today, (dt.date.fromisoformat(today)
                                                              - dt.timedelta(days=1)).isoformat()}
    pages = sum(int(m.metadata["segment_pages"].value) for m in materializations)  # type: ignore[call-overload]
    assert pages == crawl.report.metrics.pages
    latest = {m.partition: m for m in reversed(materializations)}  # each day's newest
    assert sum(int(m.metadata["day_pages"].value) for m in latest.values()) == pages  # type: ignore[call-overload]


def test_junk_links_were_handled_and_the_crawl_went_on(crawl: Crawl) -> None:
    metrics = crawl.report.metrics
    assert metrics.links_invalid > 0  # mailto:, javascript:, the 10 KB URL ...
    assert metrics.fetch_errors < metrics.pages // 10
