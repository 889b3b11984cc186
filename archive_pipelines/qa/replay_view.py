"""A capture's replay as the browser sees it: the page loaded from the replay server in
headless Chromium at the capture's viewport, scrolled to the bottom as the crawler scrolls
(lazy content), the network settled, then a full-page screenshot.

Chromium is started so that it can connect to the replay server only (`browser_launch`), and
every request of the context is routed: those for the replay server go on, any other is
aborted and listed as a leak, as is a WebSocket the page opens to anywhere else (it cannot
connect). What the replay's own Content-Security-Policy stops inside the page never becomes
a request, and is no leak. Service workers are blocked (their fetches would bypass the route).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from playwright.async_api import Browser, Page, Request, Response, Route, WebSocket
from playwright.async_api import Error as PlaywrightError

from archive_pipelines.qa.resources import ReplayAnswer, is_local, stays_on
from archive_pipelines.qa.screenshots import SCROLL_STEP, page_screenshot
from archive_pipelines.qa.viewport import CAPTURE_VIEWPORT


@dataclass(frozen=True)
class ReplayLoad:
    """Bounds of one replay load, as the crawler's page loads have them."""

    timeout_s: float = 30.0
    idle_s: float = 0.5
    max_scroll_steps: int = 20
    scroll_pause_s: float = 0.15


DEFAULT_LOAD = ReplayLoad()


@dataclass(frozen=True)
class ReplayView:
    """What the replayed page did: its full-page PNG (None if it never loaded, `error` why),
    its request chains and the requests that tried to leave the replay server."""

    screenshot: bytes | None = field(repr=False)
    answers: tuple[ReplayAnswer, ...]
    leaks: tuple[str, ...]
    timed_out: bool
    error: str | None = None


class _Traffic:
    """Every request of the replayed page: routed (on to the replay server, or refused),
    answered, and how many are in flight."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.requests: list[Request] = []
        self.responses: dict[Request, Response] = {}
        self.leaks: list[str] = []
        self.inflight = 0
        self.last_change = time.monotonic()

    async def route(self, route: Route) -> None:
        url = route.request.url
        try:
            if stays_on(url, self.origin):
                await route.continue_()
            else:
                self.leaks.append(url)
                await route.abort("blockedbyclient")
        except PlaywrightError:
            pass  # the page went away first

    def on_websocket(self, socket: WebSocket) -> None:
        if not stays_on(socket.url, self.origin):
            self.leaks.append(socket.url)  # it cannot connect: nothing else resolves

    def on_request(self, request: Request) -> None:
        if not is_local(request.url):
            self.requests.append(request)
            self._busy(+1)

    def on_response(self, response: Response) -> None:
        self.responses[response.request] = response

    def on_done(self, request: Request) -> None:
        if not is_local(request.url):
            self._busy(-1)

    def _busy(self, change: int) -> None:
        self.inflight = max(0, self.inflight + change)
        self.last_change = time.monotonic()

    async def settle(self, idle_s: float, deadline: float) -> bool:
        while True:
            now = time.monotonic()
            if self.inflight == 0 and now - self.last_change >= idle_s:
                return True
            if now >= deadline:
                return False
            await asyncio.sleep(min(0.05, deadline - now))

    def answers(self) -> tuple[ReplayAnswer, ...]:
        """One answer per request chain (a chain ends at a request not redirected further)."""
        out = []
        for request in self.requests:
            if request.redirected_to is not None:
                continue
            chain = [request.url]
            earlier = request.redirected_from
            while earlier is not None:
                chain.insert(0, earlier.url)
                earlier = earlier.redirected_from
            response = self.responses.get(request)
            memento = response is not None and "memento-datetime" in response.headers
            out.append(ReplayAnswer(chain=tuple(chain),
                                    status=None if response is None else response.status,
                                    memento=memento))
        return tuple(out)


async def view_replay(browser: Browser, replay_url: str, *, origin: str,
                      load: ReplayLoad = DEFAULT_LOAD) -> ReplayView:
    """Load `replay_url` (on the replay server at `origin`) in a new context of `browser`
    (one `launch_for_replay` started, for `origin`'s server)."""
    context = await browser.new_context(
        service_workers="block", accept_downloads=False,
        viewport={"width": CAPTURE_VIEWPORT[0], "height": CAPTURE_VIEWPORT[1]})
    traffic = _Traffic(origin)
    try:
        await context.route("**/*", traffic.route)
        context.on("request", traffic.on_request)
        context.on("response", traffic.on_response)
        context.on("requestfinished", traffic.on_done)
        context.on("requestfailed", traffic.on_done)
        page = await context.new_page()
        page.on("websocket", traffic.on_websocket)
        deadline = time.monotonic() + load.timeout_s
        error, screenshot, timed_out = None, None, False
        try:
            await page.goto(replay_url, wait_until="load", timeout=load.timeout_s * 1000)
            timed_out = not await _scroll_and_settle(page, traffic, load=load, deadline=deadline)
            screenshot = await page_screenshot(page, timeout_ms=load.timeout_s * 1000)
        except PlaywrightError as exc:
            error = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return ReplayView(screenshot=screenshot, answers=traffic.answers(),
                          leaks=tuple(traffic.leaks), timed_out=timed_out, error=error)
    finally:
        await context.close()


async def _scroll_and_settle(page: Page, traffic: _Traffic, *, load: ReplayLoad,
                             deadline: float) -> bool:
    """Scroll down a viewport at a time to the bottom, then wait for the network; False if
    the deadline came first."""
    if not await traffic.settle(load.idle_s, deadline):
        return False
    for _ in range(load.max_scroll_steps):
        if time.monotonic() >= deadline:
            return False
        try:
            at_bottom = await page.evaluate(SCROLL_STEP)
        except PlaywrightError:
            break
        await asyncio.sleep(load.scroll_pause_s)
        if at_bottom:
            break
    return await traffic.settle(load.idle_s, deadline)
