"""A stop whose drain times out while a page is loading in the browser: the page load is cut
with its worker, its URL stays queued (no record of it), the pool closes, and no page-load
task is left running against the closed browser."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web

from frontier_service.archiving import iter_records
from frontier_service.service.service import CrawlerService
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.crawls import delete_keys

HOST = "slow.example"
PAGE = ('<html><body><p>Waiting for data</p><script>fetch("/slow.json").then(r => r.text())'
        '.then(t => { document.body.innerHTML += t; });</script></body></html>')


@asynccontextmanager
async def slow_site(asked: asyncio.Event) -> AsyncIterator[int]:
    """A page whose script fetches a JSON that takes 4 s to answer."""
    async def page(_request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def slow(_request: web.Request) -> web.Response:
        asked.set()
        await asyncio.sleep(4.0)
        return web.Response(text="{}", content_type="application/json")

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/slow.json", slow)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


def test_a_drain_that_times_out_cuts_the_page_load_and_keeps_its_url_queued(
        redis_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    name = f"drain-{uuid.uuid4().hex[:10]}"

    async def crawl() -> tuple[CrawlerService, float]:
        asked = asyncio.Event()
        async with slow_site(asked) as port:
            settings = crawler_settings(
                tmp_path / "data", redis_url, name, port, allowed_domains=(HOST,),
                host_map=((HOST, f"127.0.0.1:{port}"),), browser="always", drain_timeout_s=0.5,
                exit_when_idle_s=0.0, fetch_overrides={"read_timeout_s": 10.0,
                                                      "total_timeout_s": 10.0})
            service = CrawlerService(settings, seeds=(f"http://{HOST}/",))
            running = asyncio.create_task(service.run())
            await asyncio.wait_for(asked.wait(), 30)  # the page is loading, its fetch hangs
            service.request_stop("test stop")
            began = time.monotonic()
            await running
            return service, time.monotonic() - began

    caplog.set_level(logging.WARNING)
    try:
        service, stopping_s = asyncio.run(crawl())
    finally:
        delete_keys(redis_url, name)
    assert stopping_s < 3.5  # the drain's 0.5 s and the pool's close, not the 4 s fetch
    assert "drain timeout: cancelling 1 fetches" in caplog.text
    assert "never retrieved" not in caplog.text and "Traceback" not in caplog.text
    pages = [r for r in iter_records(tmp_path / "data" / "sessions") if r["requests"]]
    assert pages == []  # the cut page is not recorded: its URL waits for the next run
    assert service.metrics.browser_pages == 0
