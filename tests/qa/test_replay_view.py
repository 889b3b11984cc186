"""The replay view in real Chromium against a small server on loopback standing in for the
replay server (no CSP of its own, unlike the replay): what a page asks of its own server goes
there, any other request (an image, a fetch(), a WebSocket of 169.254.169.254 or 10.0.0.1, the
server's own address by IP) is refused or cannot connect, and is listed as a leak; the
screenshot is taken at the capture's viewport width. And the launch switches are the
crawler's, but for the one name that reaches the replay server."""

from __future__ import annotations

import asyncio
import io

from aiohttp import web
from PIL import Image
from playwright.async_api import async_playwright

from archive_pipelines.http_site import listen
from archive_pipelines.qa.browser_launch import (
    NO_NETWORK_SWITCHES,
    REPLAY_NAME,
    chromium_args,
    launch_for_replay,
)
from archive_pipelines.qa.replay_view import ReplayLoad, ReplayView, view_replay
from archive_pipelines.qa.viewport import CAPTURE_VIEWPORT
from frontier_service.browser.chromium import NO_NETWORK_ARGS

LEAKY = """<!DOCTYPE html><html><body><h1>Leaky</h1>
<img src="/ok.png"><img src="http://169.254.169.254/latest/x.png">
<img src="http://127.0.0.1:{port}/direct.png">
<script>
fetch("http://10.0.0.1/api").catch(() => {{}});
try {{ new WebSocket("ws://10.0.0.1/socket"); }} catch (e) {{}}
</script></body></html>"""


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 0, 0)).save(out, format="PNG")
    return out.getvalue()


def test_requests_beyond_the_server_are_refused_and_listed_as_leaks() -> None:
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.path)
        if request.path == "/page":
            return web.Response(text=LEAKY.format(port=port), content_type="text/html")
        if request.path == "/ok.png":
            return web.Response(body=_png(), content_type="image/png",
                                headers={"Memento-Datetime": "Sat, 28 Nov 2026 05:00:00 GMT"})
        return web.Response(status=404)

    port = 0
    origin = f"http://{REPLAY_NAME}"

    async def main() -> ReplayView:
        nonlocal port
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        port = await listen(runner, "127.0.0.1", 0)
        try:
            async with async_playwright() as playwright:
                browser = await launch_for_replay(playwright, replay_host="127.0.0.1",
                                                  replay_port=port)
                try:
                    view = await view_replay(browser, origin + "/page", origin=origin,
                                             load=ReplayLoad(timeout_s=15, idle_s=0.3))
                finally:
                    await browser.close()
        finally:
            await runner.cleanup()
        return view

    view = asyncio.run(main())
    # Every try elsewhere, the server's own address by IP included, is a leak; none got there.
    assert sorted(view.leaks) == sorted([
        "http://169.254.169.254/latest/x.png", f"http://127.0.0.1:{port}/direct.png",
        "http://10.0.0.1/api", "ws://10.0.0.1/socket"]), view.leaks
    assert [p for p in seen if p != "/favicon.ico"] == ["/page", "/ok.png"]
    answered = {a.chain[0]: (a.status, a.memento) for a in view.answers}
    assert answered[f"{origin}/ok.png"] == (200, True)
    assert answered[f"{origin}/page"] == (200, False)
    assert view.screenshot is not None and view.error is None
    assert Image.open(io.BytesIO(view.screenshot)).size[0] == CAPTURE_VIEWPORT[0]


def test_the_launch_switches_are_the_crawlers_but_the_replay_host_resolves() -> None:
    crawler = [arg for arg in NO_NETWORK_ARGS if not arg.startswith("--host-resolver-rules")]
    assert list(NO_NETWORK_SWITCHES) == crawler  # one list: the crawler's are these
    args = chromium_args("127.0.0.1", 8123)
    assert args[0] == ("--host-resolver-rules=MAP replay.qa.invalid 127.0.0.1:8123, "
                       "MAP * ~NOTFOUND")
    assert chromium_args("::1", 80)[0].startswith(
        "--host-resolver-rules=MAP replay.qa.invalid [::1]:80,")
    assert args[1:1 + len(crawler)] == crawler
