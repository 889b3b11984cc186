"""A queued crawl run across machines: two `serve --machine` crawlers, each with its own data
dir, on one catalog and one Redis; one takes the crawl, the other joins it; every page is
fetched once, by either, and the request is finished once; then neither keeps the crawl's
frontier folder."""

from __future__ import annotations

import collections
import time
from pathlib import Path

from archive_pipelines.crawls.definitions import CrawlDefinition
from archive_pipelines.crawls.requests import queue_crawl
from archive_testkit.testweb import TestWeb
from tests.frontier_service.service.cli_runs import HOSTS
from tests.frontier_service.service.serve_runs import (
    fetched_pages,
    initialized,
    start_serve,
    stop_serve,
    wait_for,
)


def test_two_machines_serve_one_queued_crawl(web: TestWeb, tmp_path: Path, redis_url: str) -> None:
    catalog_file = tmp_path / "catalog.sqlite3"
    toml = f'[catalog]\nurl = "sqlite:///{catalog_file}"\n'
    data_a, data_b = tmp_path / "a", tmp_path / "b"
    with initialized(data_a, toml) as catalog, initialized(data_b, toml):
        body = CrawlDefinition(
            name="web", seeds=tuple(f"http://{host}/" for host in HOSTS), allowed_domains=HOSTS,
            allowed_networks=(f"127.0.0.1:{web.port}",), host_map=(("*.test", f"127.0.0.1:{web.port}"),),
            max_depth=1, per_host_concurrency=1, min_delay_seconds=1.0)
        web.log.clear()
        machine = ("--machine-lease", "2")
        serve_a = start_serve(data_a, redis_url, "--machine", "a", *machine)
        serve_b = start_serve(data_b, redis_url, "--machine", "b", *machine)
        try:
            request = queue_crawl(catalog, body.as_dict(), name="web", requested_by="test")
            done = wait_for(catalog, request.crawl_id, process=serve_a, timeout=120)
            # the helper's frontier folder goes too, once it sees the crawl finished
            folders = [data / "crawls" / request.crawl_id for data in (data_a, data_b)]
            deadline = time.monotonic() + 30
            while any(folder.exists() for folder in folders) and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            log_a, log_b = stop_serve(serve_a), stop_serve(serve_b)
    taker, helper = (log_a, log_b) if f"took crawl {request.crawl_id}" in log_a else (log_b, log_a)
    assert f"took crawl {request.crawl_id}" in taker
    assert f"joining crawl {request.crawl_id}" in helper, helper[-3000:]
    assert done.outcome is not None and done.outcome["stopped_because"] == "frontier exhausted"
    requests = collections.Counter((r.host, r.path_qs) for r in web.log.records()
                                   if r.path_qs != "/robots.txt")
    assert requests and max(requests.values()) == 1, requests.most_common(3)  # each page once
    a, b = fetched_pages(data_a), fetched_pages(data_b)
    assert a and b, (len(a), len(b), helper[-5000:])  # both machines crawled
    assert not set(a) & set(b)
    assert done.outcome["pages"] == len(a) + len(b)
    assert f"crawl {request.crawl_id}: removed its frontier folder (" in helper, helper[-3000:]
    assert not any(folder.exists() for folder in folders)
