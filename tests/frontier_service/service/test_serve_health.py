"""`frontier-service serve` has a health endpoint, as `run` does: /healthz names the crawls it
runs and their pages, /metrics has their figures and the crawls running and ended."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.server_process import free_port
from frontier_service.metrics import CrawlMetrics
from frontier_service.service.serve_health import ServedCrawl, ServeHealthServer, ServeState
from tests.frontier_service.service.serve_runs import (
    initialized,
    queue,
    start_serve,
    stop_serve,
    wait_for,
)
from tests.frontier_service.service.tree_site import TreeSite, serve_tree


@pytest.fixture(scope="module")
def slow_site() -> Iterator[TreeSite]:
    """53 pages to depth 3: a crawl of it at one request at a time, 50 ms apart, takes
    seconds."""
    with serve_tree(wide=4, deep=3) as served:
        yield served


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _sample(text: str, name: str) -> float:
    [value] = [line.split()[1] for line in text.splitlines() if line.startswith(f"{name} ")]
    return float(value)


def test_serve_reports_its_crawls_on_healthz_and_metrics(
        slow_site: TreeSite, tmp_path: Path, redis_url: str) -> None:
    data = tmp_path / "data"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with initialized(data) as catalog:
        request = queue(catalog, slow_site, per_host=1, min_delay_s=0.05)
        serve = start_serve(data, redis_url, "--metrics-port", str(port))
        try:
            deadline = time.monotonic() + 60
            while True:  # the crawl running, some pages fetched
                assert serve.poll() is None, serve.communicate()[1][-3000:]
                try:
                    status, text = _get(f"{base}/healthz")
                except OSError:  # not listening yet
                    status, text = 0, "{}"
                health = json.loads(text)
                if status == 200 and health.get("crawls") and health["crawls"][0]["pages"] > 0:
                    break
                assert time.monotonic() < deadline, (status, text)
                time.sleep(0.2)
            assert health["status"] == "ok" and health["crawls_running"] == 1
            [crawl] = health["crawls"]
            assert crawl["crawl_id"] == request.crawl_id and crawl["joined"] is False
            assert isinstance(crawl["pid"], int)
            status, metrics = _get(f"{base}/metrics")
            assert status == 200
            assert _sample(metrics, "frontier_serve_crawls_running") == 1
            assert _sample(metrics, "frontier_pages_total") > 0
            done = wait_for(catalog, request.crawl_id, process=serve)
            deadline = time.monotonic() + 10
            while json.loads(_get(f"{base}/healthz")[1])["crawls_running"]:
                assert time.monotonic() < deadline
                time.sleep(0.1)
            status, text = _get(f"{base}/healthz")
            assert status == 200 and json.loads(text)["crawls_ended"] == 1
            metrics = _get(f"{base}/metrics")[1]
            assert _sample(metrics, "frontier_serve_crawls_ended_total") == 1
            assert _sample(metrics, "frontier_serve_crawls_running") == 0
        finally:
            log = stop_serve(serve)
    assert done.outcome is not None and done.outcome["pages"] == 53
    assert f"health {base}" in log
    with pytest.raises(OSError):  # stopped with serve
        _get(f"{base}/healthz")


def test_a_stopping_crawler_answers_503_draining() -> None:
    state = ServeState(worker="box:1", stopping=True, ended=3, crawls=[
        ServedCrawl(crawl_id="c-1", pid=7, joined=True, metrics=CrawlMetrics(pages=5)),
        ServedCrawl(crawl_id="c-2", pid=None, joined=False, metrics=None)])

    async def ask() -> list[tuple[int, str]]:
        server = ServeHealthServer(lambda: state)
        await server.start()
        try:
            return [await asyncio.to_thread(_get, f"{server.url}/{path}")
                    for path in ("healthz", "metrics")]
        finally:
            await server.stop()

    (status, text), (_, metrics) = asyncio.run(ask())
    health = json.loads(text)
    assert status == 503 and health["status"] == "draining" and health["crawls_ended"] == 3
    assert [c["crawl_id"] for c in health["crawls"]] == ["c-1", "c-2"]
    assert health["crawls"][1]["pages"] == 0  # no snapshot yet
    assert _sample(metrics, "frontier_pages_total") == 5
    assert _sample(metrics, "frontier_stopping") == 1
    assert _sample(metrics, "frontier_serve_crawls_running") == 2
