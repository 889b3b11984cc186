"""What the browser tests load: the test web, a small page server of their own (lazy images,
hostile pages, cookies, a redirect), a listener on an unlisted loopback port that counts the
connections it gets, and the crawl's real fetch (Fetcher, CrawlResolver, Scope) pointed at them."""

from __future__ import annotations

import random
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field

from aiohttp import web
from playwright.async_api import BrowserContext, async_playwright

from archive_testkit.testweb import TestWebConfig, hosts_where
from archive_testkit.testweb.assets import png
from frontier_service.browser import CrawlFetch, launch_chromium, new_context
from frontier_service.fetch import Fetcher, FetchSettings
from frontier_service.scope.address_policy import AddressPolicy
from frontier_service.scope.crawl_scope import Scope
from frontier_service.scope.resolver import CrawlResolver

WEB = TestWebConfig(seed=32, hosts=4, pages_per_host=5, special_fraction=0.0, trap_fraction=0.0,
                    dead_fraction=0.0, robots_fraction=0.0)
HOST = hosts_where(WEB, lambda t: t.alive)[0]
OWN = "own.example"  # the page server's name, mapped by the crawl's host_map
FAST = FetchSettings(connect_timeout_s=2.0, read_timeout_s=2.0, total_timeout_s=5.0,
                     fetch_deadline_s=8.0, retry_backoff_s=(0.02,))
PIXEL = png(16, 16, random.Random(32))


@dataclass
class PageServer:
    """Pages by path: (status, headers, body); records each request's path and headers."""

    pages: dict[str, tuple[int, dict[str, str], bytes]]
    asked: list[str] = field(default_factory=list)
    headers: dict[str, dict[str, str]] = field(default_factory=dict)
    port: int = 0

    async def handle(self, request: web.Request) -> web.Response:
        self.asked.append(request.path)
        self.headers[request.path] = dict(request.headers)
        status, headers, body = self.pages.get(request.path, (404, {}, b"no"))
        return web.Response(status=status, headers=headers, body=body)


@asynccontextmanager
async def page_server(pages: dict[str, tuple[int, dict[str, str], bytes]]) -> AsyncIterator[PageServer]:
    server = PageServer(pages)
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    server.port = runner.addresses[0][1]
    try:
        yield server
    finally:
        await runner.cleanup()


def html(text: str) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "text/html; charset=utf-8"}, text.encode()


def image() -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "image/png"}, PIXEL


@dataclass
class Listener:
    """A loopback port nobody listed: it counts every connection it accepts."""

    port: int
    accepted: list[tuple[str, int]]


@contextmanager
def unlisted_port() -> Iterator[Listener]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(0.1)
    listener = Listener(sock.getsockname()[1], [])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, peer = sock.accept()
            except TimeoutError:
                continue
            listener.accepted.append(peer)
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        stop.set()
        thread.join()
        sock.close()


@asynccontextmanager
async def crawl_browser(web_port: int, own_port: int | None = None, *,
                        storage_state: str | None = None
                        ) -> AsyncIterator[tuple[BrowserContext, CrawlFetch]]:
    """A Chromium context and the crawl's fetch: *.test is the test web, own.example the page
    server; only those two ports of 127.0.0.1 are listed, every other address refused."""
    listed = [f"127.0.0.1:{web_port}", *([f"127.0.0.1:{own_port}"] if own_port else [])]
    policy = AddressPolicy(listed)
    host_map = [("*.test", f"127.0.0.1:{web_port}"),
                ("metadata.example", "169.254.169.254"), ("intranet.example", "10.0.0.1"),
                *([(OWN, f"127.0.0.1:{own_port}")] if own_port else [])]
    async with async_playwright() as playwright:
        browser = await launch_chromium(playwright)
        try:
            context = await new_context(browser, storage_state=storage_state)
            async with Fetcher(FAST, resolver=CrawlResolver(host_map, policy=policy)) as fetcher:
                yield context, CrawlFetch(fetcher, Scope(addresses=policy))
        finally:
            await browser.close()
