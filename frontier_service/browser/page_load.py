"""One page load in Chromium, every request answered by the crawl's fetch and recorded.

`load_page` routes every request of the context (`context.route("**/*")`) to `fetch`; what the
fetch refuses, and what goes over the page's allowance, is aborted and recorded as refused with
the reason; WebSockets are refused. Main-document redirects are followed by navigating again,
so the page's URL is its final one; other requests' redirects are followed by the fetch.
Bounded: scroll to the bottom in steps, wait for the network to settle, all within a time cap;
then the rendered DOM and a full-page screenshot.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from playwright.async_api import BrowserContext, Page, Route, WebSocketRoute
from playwright.async_api import Error as PlaywrightError

from archive_pipelines.qa.screenshots import SCROLL_STEP, page_screenshot
from frontier_service.browser.header_hashing import HeaderHasher
from frontier_service.fetch.result import FetchErrorKind, FetchResult

REDIRECTS = frozenset({301, 302, 303, 307, 308})
OVER_ALLOWANCE = "over the page's allowance"  # how the reason of such a refusal begins
# Not passed on to Chromium: the body handed over is whole and decoded (unless body_encoding).
_DROPPED_RESPONSE_HEADERS = frozenset({"content-length", "transfer-encoding", "connection",
                                       "keep-alive", "content-encoding"})


@dataclass(frozen=True)
class BrowserSettings:
    """Bounds of one page load.

    Args:
        page_timeout_s: navigation, scrolling and settling together (the DOM and screenshot
            are taken after, within `capture_timeout_s`).
        max_requests_per_page: the page's allowance of requests besides its main document;
            the rest are refused and counted (`PageLoad.over_allowance`).
        max_redirects: main-document redirects followed.
        max_scroll_steps: viewport-high scroll steps towards the bottom (lazy content).
        scroll_pause_s: the pause after each step, for observers to fire.
        idle_s: the network is settled after this long with no request in flight.
    """

    page_timeout_s: float = 30.0
    max_requests_per_page: int = 200
    max_redirects: int = 5
    max_scroll_steps: int = 20
    scroll_pause_s: float = 0.15
    idle_s: float = 0.5
    capture_timeout_s: float = 15.0

    def __post_init__(self) -> None:
        if self.page_timeout_s <= 0 or self.capture_timeout_s <= 0:
            raise ValueError("page_timeout_s and capture_timeout_s must be > 0")
        if self.max_requests_per_page < 0 or self.max_redirects < 0 or self.max_scroll_steps < 0:
            raise ValueError("max_requests_per_page, max_redirects and max_scroll_steps must be >= 0")


@dataclass(frozen=True)
class BrowserRequest:
    """What the page asked for, as the fetch sees it. `headers` are the browser's, in clear:
    the fetch may send some on (a login profile's Cookie), the record holds only their hashes."""

    url: str
    method: str
    resource_type: str  # Chromium's: document, stylesheet, script, image, font, fetch, xhr ...
    headers: tuple[tuple[str, str], ...]
    navigation_id: str
    request_id: str
    is_navigation: bool
    follow_redirects: bool  # False for the main document: load_page navigates to the target


# The crawl's way out: returns the response (or a FetchResult with error_kind REFUSED and the
# reason in `error`, never connecting) for one request; never raises for web trouble.
Fetch = Callable[[BrowserRequest], Awaitable[FetchResult]]


@dataclass(frozen=True)
class RecordedRequest:
    """One request of the page and its answer. `result` carries the response (status, headers
    with Set-Cookie hashed, redirects, timings, the body for the blob store); `refused` the
    reason a request was not fetched (scope, robots, address, allowance, WebSocket)."""

    request_id: str
    navigation_id: str
    method: str
    url: str
    resource_type: str
    is_navigation: bool
    request_headers: tuple[tuple[str, str], ...]  # Cookie/Authorization values hashed
    result: FetchResult
    started_at: float  # epoch seconds
    elapsed_s: float
    refused: str | None = None

    @property
    def status(self) -> int | None:
        return self.result.status

    @property
    def body_sha256(self) -> str | None:
        body = self.result.body
        return None if self.result.status is None or body is None else hashlib.sha256(body).hexdigest()

    @property
    def body_size(self) -> int:
        return len(self.result.body or b"")


@dataclass(frozen=True)
class PageLoad:
    """What one page load saw: every request, the rendered DOM and a full-page PNG (None when
    the main document never arrived); `error` says why the load failed, in one line."""

    url: str
    final_url: str
    navigation_id: str
    requests: tuple[RecordedRequest, ...]
    dom: str | None
    screenshot: bytes | None = field(repr=False)
    timed_out: bool
    over_allowance: int
    error: str | None = None

    @property
    def refused(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.refused is not None]

    @property
    def answered(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.refused is None and r.status is not None]


def refused_result(url: str, reason: str) -> FetchResult:
    """A fetch that was not made: no response, `error` the reason."""
    return FetchResult(url=url, final_url=url, status=None, error=reason,
                       error_kind=FetchErrorKind.REFUSED, started_at=time.time())


class _Recorder:
    """The route handlers of one page load and what they saw."""

    def __init__(self, page: Page, fetch: Fetch, *, hasher: HeaderHasher,
                 settings: BrowserSettings) -> None:
        self.page = page
        self.fetch = fetch
        self.hasher = hasher
        self.settings = settings
        self.navigation_id = str(uuid.uuid4())
        self.requests: list[RecordedRequest] = []
        self.counted = 0
        self.over_allowance = 0
        self.inflight = 0
        self.last_change = time.monotonic()
        self.redirect_to: str | None = None  # the main document's pending redirect
        self.document: RecordedRequest | None = None  # the main document's latest answer

    async def route(self, route: Route) -> None:
        self._busy(+1)
        try:
            await self._answer(route)
        except PlaywrightError:
            pass  # the page went away (closed, navigated) before the answer: nothing to do
        finally:
            self._busy(-1)

    async def _answer(self, route: Route) -> None:
        request = route.request
        main = request.is_navigation_request() and _in_main_frame(request.frame, self.page)
        browser_request = BrowserRequest(
            url=request.url, method=request.method, resource_type=request.resource_type,
            headers=tuple((h["name"], h["value"]) for h in await request.headers_array()),
            navigation_id=self.navigation_id, request_id=str(uuid.uuid4()),
            is_navigation=request.is_navigation_request(), follow_redirects=not main)
        started, began = time.time(), time.monotonic()
        refusal = None if main else self._allowance_refusal()
        result = (refused_result(request.url, refusal) if refusal is not None
                  else await self.fetch(browser_request))
        recorded = self._record(browser_request, result, started=started,
                                elapsed=time.monotonic() - began)
        if main:
            self.document = recorded
        if recorded.refused is not None or result.status is None:
            await route.abort("blockedbyclient" if recorded.refused is not None else "failed")
            return
        location = _location(result)
        if main and result.status in REDIRECTS and location is not None:
            self.redirect_to = location  # followed by navigating there (load_page)
            await route.abort("aborted")
            return
        await route.fulfill(status=result.status, headers=_response_headers(result),
                            body=result.body or b"")

    async def websocket(self, socket: WebSocketRoute) -> None:
        request = BrowserRequest(url=socket.url, method="GET", resource_type="websocket", headers=(),
                                 navigation_id=self.navigation_id, request_id=str(uuid.uuid4()),
                                 is_navigation=False, follow_redirects=False)
        reason = "WebSockets are not archived: refused without connecting"
        self._record(request, refused_result(socket.url, reason), started=time.time(), elapsed=0.0)
        await socket.close(code=1008, reason="refused by the crawl")

    def _allowance_refusal(self) -> str | None:
        self.counted += 1
        if self.counted <= self.settings.max_requests_per_page:
            return None
        self.over_allowance += 1
        return f"{OVER_ALLOWANCE} of {self.settings.max_requests_per_page} requests"

    def _record(self, request: BrowserRequest, result: FetchResult, *, started: float,
                elapsed: float) -> RecordedRequest:
        hashed = replace(result, request_headers=self.hasher.headers(result.request_headers),
                         response_headers=self.hasher.headers(result.response_headers))
        refused = result.error if result.error_kind is FetchErrorKind.REFUSED else None
        recorded = RecordedRequest(
            request_id=request.request_id, navigation_id=request.navigation_id,
            method=request.method, url=request.url, resource_type=request.resource_type,
            is_navigation=request.is_navigation,
            request_headers=tuple(self.hasher.headers(request.headers)), result=hashed,
            started_at=started, elapsed_s=elapsed, refused=refused)
        self.requests.append(recorded)
        return recorded

    def _busy(self, change: int) -> None:
        self.inflight += change
        self.last_change = time.monotonic()

    async def settle(self, deadline: float) -> bool:
        """Wait until no request has been in flight for `idle_s`; False at the deadline."""
        while True:
            now = time.monotonic()
            if self.inflight == 0 and now - self.last_change >= self.settings.idle_s:
                return True
            if now >= deadline:
                return False
            await asyncio.sleep(min(0.05, deadline - now))


async def load_page(context: BrowserContext, url: str, *, fetch: Fetch,
                    settings: BrowserSettings, hasher: HeaderHasher) -> PageLoad:
    """Load `url` in a new page of `context`, every request answered by `fetch`.

    The context must run one load at a time (its routes are this load's); use
    `chromium.new_context` so service workers are blocked. Never raises for web trouble:
    failures are in `PageLoad.error`, refusals in the requests.
    """
    page = await context.new_page()
    recorder = _Recorder(page, fetch, hasher=hasher, settings=settings)
    await context.route("**/*", recorder.route)
    await context.route_web_socket("**", recorder.websocket)
    deadline = time.monotonic() + settings.page_timeout_s
    try:
        error, timed_out = await _navigate(page, url, recorder, deadline=deadline)
        if error is None and not timed_out:
            timed_out = not await _scroll_and_settle(page, recorder, deadline)
        dom, screenshot = None, None
        document = recorder.document
        if document is not None and document.status is not None and document.refused is None:
            dom, screenshot, capture_error = await _capture(page, settings.capture_timeout_s)
            error = error or capture_error
        elif error is None:
            error = "the page's document never arrived"
        return PageLoad(url=url, final_url=page.url if dom is not None else url,
                        navigation_id=recorder.navigation_id, requests=tuple(recorder.requests),
                        dom=dom, screenshot=screenshot, timed_out=timed_out,
                        over_allowance=recorder.over_allowance, error=error)
    finally:
        await page.close()
        await context.unroute_all(behavior="ignoreErrors")


async def _navigate(page: Page, url: str, recorder: _Recorder, *,
                    deadline: float) -> tuple[str | None, bool]:
    """(error, timed out) of going to `url`, main-document redirects followed."""
    target = url
    for _ in range(recorder.settings.max_redirects + 1):
        recorder.redirect_to = None
        remaining_ms = max(1.0, (deadline - time.monotonic()) * 1000)
        try:
            await page.goto(target, wait_until="load", timeout=remaining_ms)
            return None, False
        except PlaywrightError as exc:
            if recorder.redirect_to is None:
                timed_out = time.monotonic() >= deadline or "Timeout" in type(exc).__name__
                document = recorder.document
                if document is not None and document.refused is not None:
                    return f"the page's document was refused: {document.refused}", False
                return (None, True) if timed_out else (_first_line(exc), False)
            target = recorder.redirect_to
    return f"more than {recorder.settings.max_redirects} redirects", False


async def _scroll_and_settle(page: Page, recorder: _Recorder, deadline: float) -> bool:
    """Scroll down a viewport at a time until the bottom, then wait for the network; False if
    the deadline came first."""
    settings = recorder.settings
    if not await recorder.settle(deadline):
        return False
    for _ in range(settings.max_scroll_steps):
        if time.monotonic() >= deadline:
            return False
        try:
            at_bottom = await page.evaluate(SCROLL_STEP)
        except PlaywrightError:
            break  # navigated away mid-step: the settle below still waits for its requests
        await asyncio.sleep(settings.scroll_pause_s)
        if at_bottom:
            break
    return await recorder.settle(deadline)


async def _capture(page: Page, timeout_s: float) -> tuple[str | None, bytes | None, str | None]:
    """(DOM, full-page PNG, error) of the page as it is now."""
    try:
        async with asyncio.timeout(timeout_s):
            dom = await page.content()
            screenshot = await page_screenshot(page, timeout_ms=timeout_s * 1000)
        return dom, screenshot, None
    except TimeoutError:
        return None, None, f"capture failed: the DOM and screenshot took over {timeout_s:g} s"
    except PlaywrightError as exc:
        return None, None, f"capture failed: {_first_line(exc)}"


def _in_main_frame(frame: object, page: Page) -> bool:
    return frame is page.main_frame


def _location(result: FetchResult) -> str | None:
    """The absolute target of a redirect answer (the fetcher resolved it into `redirects`)."""
    return result.redirects[-1].location if result.redirects else None


def _response_headers(result: FetchResult) -> dict[str, str]:
    """Headers for Chromium: repeated ones joined (Set-Cookie by newlines, as Playwright
    splits them), framing headers dropped (the body is whole and decoded)."""
    keep_encoding = result.body_encoding is not None
    joined: dict[str, list[str]] = {}
    for name, value in result.response_headers:
        lower = name.lower()
        if lower in _DROPPED_RESPONSE_HEADERS and not (keep_encoding and lower == "content-encoding"):
            continue
        joined.setdefault(lower, []).append(value)
    return {name: ("\n" if name == "set-cookie" else ", ").join(values)
            for name, values in joined.items()}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
