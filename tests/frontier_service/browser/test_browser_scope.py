"""The browser is held to the crawl's scope: a page whose script, iframe, image, redirect,
fetch() or WebSocket aims at 169.254.169.254, 10.0.0.1 or an unlisted loopback port gets no
connection. Proved as the crawler's scope tests prove it: the only way out is the crawl's
fetch, which refuses by the AddressPolicy before connecting (each refusal recorded with its
reason), and Chromium alone resolves and connects nothing (an unlisted loopback port that
listens counts zero connections); no traffic goes to the refused addresses."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import async_playwright

from archive_testkit.testweb import TestWeb, serve_in_background
from frontier_service.browser import (
    BrowserSettings,
    ChromiumMissing,
    HeaderHasher,
    PageLoad,
    find_chromium,
    launch_chromium,
    load_page,
    new_context,
)
from tests.frontier_service.browser.pages import (
    OWN,
    WEB,
    crawl_browser,
    html,
    image,
    page_server,
    unlisted_port,
)

SETTINGS = BrowserSettings(page_timeout_s=20.0, idle_s=0.3, scroll_pause_s=0.1)
HASHER = HeaderHasher(b"k" * 32)
METADATA = "is link-local/cloud metadata; list it exactly with --allow-network"
PRIVATE = "10.0.0.1 is private; list a network holding it"


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with serve_in_background(WEB) as running:
        yield running


def hostile_page(port: int) -> str:
    """Every way a page reaches out, at refused addresses, beside one allowed image."""
    loop = f"127.0.0.1:{port}"
    return f"""<!DOCTYPE html><html><head>
<link rel="preconnect" href="http://{loop}/"><link rel="dns-prefetch" href="//intranet.example">
<script src="http://169.254.169.254/latest/meta-data/"></script>
</head><body>
<iframe src="http://10.0.0.1/admin"></iframe>
<img src="http://{loop}/pixel.png" alt=""><img src="/to-metadata" alt="">
<img src="http://metadata.example/latest/meta-data/iam" alt=""><img src="/ok.png" alt="">
<script>
fetch("http://10.0.0.1/api").catch(() => {{}});
fetch("http://{loop}/api").catch(() => {{}});
for (const target of ["ws://{loop}/socket", "ws://169.254.169.254/", "ws://10.0.0.1/"]) {{
  try {{ new WebSocket(target); }} catch (e) {{}}
}}
</script></body></html>"""


def test_a_hostile_page_gets_no_connection_beyond_the_listed_addresses(web: TestWeb) -> None:
    async def main(port: int) -> tuple[PageLoad, list[str], float]:
        pages = {"/hostile.html": html(hostile_page(port)), "/ok.png": image(),
                 "/to-metadata": (302, {"Location": "http://169.254.169.254/latest/"}, b"")}
        async with page_server(pages) as own, crawl_browser(web.port, own.port) as (context, fetch):
            began = time.monotonic()
            load = await load_page(context, f"http://{OWN}:{own.port}/hostile.html", fetch=fetch,
                                   settings=SETTINGS, hasher=HASHER)
            return load, own.asked, time.monotonic() - began

    with unlisted_port() as listener:
        load, asked, took = asyncio.run(main(listener.port))
        time.sleep(0.3)  # a connection Chromium made on its own would have been accepted by now
    assert listener.accepted == []  # the unlisted loopback port: not one connection
    assert load.error is None, load.error
    assert sorted(asked) == ["/hostile.html", "/ok.png", "/to-metadata"]
    assert took < SETTINGS.page_timeout_s  # refused at once, not connect attempts timing out
    answered = {r.url.rsplit("/", 1)[1]: r.status for r in load.answered}
    assert answered == {"hostile.html": 200, "ok.png": 200}
    refused = {r.url: r.refused for r in load.refused}
    loop = f"127.0.0.1:{listener.port}"
    expected = {
        "http://169.254.169.254/latest/meta-data/": METADATA,  # script
        "http://10.0.0.1/admin": PRIVATE,  # iframe
        f"http://{loop}/pixel.png": f"port {listener.port} is not among the ports listed",
        f"http://{OWN}:{load.final_url.split(':')[2].split('/')[0]}/to-metadata": METADATA,
        "http://metadata.example/latest/meta-data/iam":
            "host_map sends metadata.example to 169.254.169.254, which is refused",
        "http://10.0.0.1/api": PRIVATE,  # fetch()
        f"http://{loop}/api": f"port {listener.port} is not among the ports listed",
        f"ws://{loop}/socket": "WebSockets are not archived",
        "ws://169.254.169.254/": "WebSockets are not archived",
        "ws://10.0.0.1/": "WebSockets are not archived",
    }
    assert set(refused) == set(expected), refused
    for url, reason in expected.items():
        assert reason in str(refused[url]), (url, refused[url])
    # The redirect was followed only as far as the scope allowed: its hop is on the record.
    hop = next(r for r in load.requests if r.url.endswith("/to-metadata"))
    assert [h.location for h in hop.result.redirects] == ["http://169.254.169.254/latest/"]


def test_chromium_alone_resolves_and_connects_nothing() -> None:
    """Without the route (as a request the route did not see would go): an IP literal does not
    even resolve, and preconnect, fetch() and WebSocket reach no listening loopback port."""
    async def main(port: int) -> str:
        async with async_playwright() as playwright:
            browser = await launch_chromium(playwright)
            try:
                context = await new_context(browser)
                page = await context.new_page()
                try:
                    await page.goto(f"http://127.0.0.1:{port}/", timeout=10_000)
                except PlaywrightError as exc:
                    error = str(exc)
                else:
                    error = "navigated"
                page = await context.new_page()
                await page.set_content(f"""<link rel="preconnect" href="http://127.0.0.1:{port}/">
<img src="http://127.0.0.1:{port}/x.png"><script>
fetch("http://127.0.0.1:{port}/api").catch(() => {{}});
try {{ new WebSocket("ws://127.0.0.1:{port}/"); }} catch (e) {{}}
</script>""")
                await page.wait_for_timeout(1000)
                return error
            finally:
                await browser.close()

    with unlisted_port() as listener:
        error = asyncio.run(main(listener.port))
    assert "net::ERR_NAME_NOT_RESOLVED" in error
    assert listener.accepted == []


def test_a_missing_chromium_is_a_clear_error() -> None:
    with pytest.raises(ChromiumMissing, match="is not an executable Chromium: install Debian's"):
        find_chromium("/nonexistent/chromium")
