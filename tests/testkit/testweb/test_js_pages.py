"""The JavaScript test site (`/js/` on every live host) and the script-built "mixed" web:
the server answers every listed URL; in real headless Chromium the script-built content and
images appear, lazy images load only after scrolling, the SPA's links exist only after its
script ran; over plain HTTP (the crawler's link extraction) those links and images are not
found. Chromium reaches the test web's *.test hosts by using the test web as its HTTP proxy
(it answers absolute-form requests by their Host); every request to anything else is aborted
by a route and every WebSocket refused, so no test connects anywhere but the test web."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, WebSocketRoute

from archive_testkit.testweb import TestWeb, page_links, render_page, serve_in_background
from archive_testkit.testweb import js_pages as js
from archive_testkit.testweb.graph import page_path
from archive_testkit.testweb.routes import resolve
from archive_testkit.testweb.script_built import data_path, is_script_built
from frontier_service.fetch.link_extraction import links_off_loop
from frontier_service.fetch.result import FetchResult
from frontier_service.frontier.frontier_record import ResourceType
from tests.helpers.chromium import headless_chromium
from tests.testkit.testweb.web_client import SMALL, fetch

HOST = "site0000.test"  # host 0 is always alive
MIXED = SMALL.with_changes(script_built_fraction=0.1)
# Playwright's resource types as the crawler's ResourceType names them.
_TYPES = {"fetch": "other", "xhr": "other", "document": "document", "stylesheet": "stylesheet",
          "script": "script", "image": "image", "font": "font", "media": "media"}
_INTERNAL = frozenset({"/favicon.ico"})


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with serve_in_background(MIXED) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with headless_chromium("the JavaScript test site tests") as chromium:
        yield chromium


def url(path: str, host: str = HOST) -> str:
    return f"http://{host}{path}"


# --- the truth ----------------------------------------------------------------------------

@pytest.mark.unit
def test_truth_constants_agree() -> None:
    assert js.NEEDS_BROWSER | js.FINE_OVER_HTTP == js.JS_PAGES == set(js.BROWSER_RESOURCES)
    assert not js.NEEDS_BROWSER & js.FINE_OVER_HTTP
    assert set(js.SCRIPT_ONLY) == js.NEEDS_BROWSER  # a page needs a browser: script finds more
    assert js.SCRIPT_ONLY_LINKS <= js.JS_PAGES
    linked_by_script = {link for found in js.SCRIPT_ONLY.values() for link in found
                        if link in js.JS_PAGES}
    assert linked_by_script - set(js.INDEX_LINKS) == js.SCRIPT_ONLY_LINKS
    for page, found in js.SCRIPT_ONLY.items():
        assert found & set(js.BROWSER_RESOURCES[page]) or found & js.JS_PAGES, page
    for page in (*js.JS_PAGES, js.ESCAPE, js.escape_path(8080)):
        assert resolve(SMALL, HOST, page).status == 200, page
    assert set(js.escapes(8080).addresses()) == {
        "http://169.254.169.254/latest/user-data.js", "http://10.0.0.1/admin/",
        js.METADATA_URL, "http://10.0.0.1/api/", "http://127.0.0.1:8080/",
        "ws://10.0.0.1/socket", "ws://127.0.0.1:8080/socket"}


# --- the server ---------------------------------------------------------------------------

def test_server_answers_every_listed_url(web: TestWeb) -> None:
    listed = {*js.JS_PAGES, js.NOSCRIPT_FALLBACK_IMAGE,
              *(path for resources in js.BROWSER_RESOURCES.values() for path in resources)}
    assert set(js.BROWSER_RESOURCES) == js.JS_PAGES
    assert not js.NEEDS_BROWSER & js.FINE_OVER_HTTP
    for path in sorted(listed):
        got = fetch(web.port, url(path))
        assert got.status == 200, path
        assert got.body, path
    for page in js.JS_PAGES:
        assert fetch(web.port, url(page)).headers["Content-Type"].startswith("text/html")
    assert fetch(web.port, url(js.FONT_FILES[0])).headers["Content-Type"] == "font/woff2"
    assert fetch(web.port, url(js.FETCHED_JSON)).headers["Content-Type"] == "application/json"
    # Every SPA route answers the same shell, which links nothing.
    shells = {fetch(web.port, url(route)).body for route in (js.SPA, *js.SPA_ROUTES)}
    assert len(shells) == 1 and b"<a " not in shells.pop()
    # On every live host, not only host 0; not on the docs host's pages.
    assert fetch(web.port, url(js.FETCHED, "site0001.test")).status == 200
    for missing in ("/js/none.html", "/js/app/items/3", "/js/escape/0.html", "/js/escape/65536.html",
                    "/js/img/none.png"):
        assert fetch(web.port, url(missing)).status == 404, missing


def test_escape_pages_and_redirect(web: TestWeb) -> None:
    tries = js.escapes(4321)
    page = fetch(web.port, url(js.escape_path(4321))).body.decode()
    for target in (tries.script, tries.iframe, *tries.fetches, tries.redirect, *tries.websockets,
                   tries.same_host_websocket):
        assert target in page
    assert "127.0.0.1:4321" in page and "127.0.0.1:9/" not in page
    assert f"127.0.0.1:{js.UNLISTED_LOOPBACK_PORT}/" in fetch(web.port, url(js.ESCAPE)).body.decode()
    moved = fetch(web.port, url(js.ESCAPE_REDIRECT))
    assert (moved.status, moved.headers["Location"]) == (302, js.METADATA_URL)
    with pytest.raises(ValueError, match="not a TCP port"):
        js.escape_path(0)


# --- over plain HTTP ----------------------------------------------------------------------

def http_finds(port: int, page: str) -> tuple[set[str], set[str]]:
    """(pages, assets) the crawler's link extraction finds for `page`, as paths on HOST; the
    stylesheets found are read for their links too, as the crawler does."""
    pages, assets = extracted(port, page, ResourceType.DOCUMENT)
    for stylesheet in [asset for asset in assets if asset.endswith(".css")]:
        assets |= extracted(port, stylesheet, ResourceType.STYLESHEET)[1]
    return pages, assets


def extracted(port: int, path: str, kind: ResourceType) -> tuple[set[str], set[str]]:
    """(pages, assets) of one page or stylesheet; in a thread of its own, as Playwright's sync
    API keeps an event loop running in this one."""
    with ThreadPoolExecutor(1) as apart:
        return apart.submit(_extracted, port, path, kind).result()


def _extracted(port: int, path: str, kind: ResourceType) -> tuple[set[str], set[str]]:
    got = fetch(port, url(path))
    media_type = got.headers["Content-Type"].split(";")[0]
    result = FetchResult(url=url(path), final_url=url(path), status=got.status, body=got.body,
                         content_type=media_type, charset="utf-8",
                         response_headers=list(got.headers.items()))
    links = asyncio.run(links_off_loop(result, kind=kind))
    assert links is not None
    return {on_host(link) for link in links.pages}, {on_host(link) for link in links.assets}


def on_host(link: str) -> str:
    parts = urlsplit(link)
    assert parts.netloc == HOST, link
    return parts.path + (f"?{parts.query}" if parts.query else "")


def test_http_link_extraction_misses_what_script_builds(web: TestWeb) -> None:
    for page in sorted(js.JS_PAGES):
        pages, assets = http_finds(web.port, page)
        resources = set(js.BROWSER_RESOURCES[page])
        script_only = js.SCRIPT_ONLY.get(page, frozenset())
        assert not (pages | assets) & script_only, page
        assert resources - script_only <= assets, page
        if page in js.FINE_OVER_HTTP:
            assert assets == resources, page  # HTTP finds everything a browser loads
        else:
            assert resources & script_only, page  # and here it misses some
    assert http_finds(web.port, js.NOSCRIPT)[1] == {js.NOSCRIPT_FALLBACK_IMAGE}
    assert js.FETCHED_TEXT.encode() not in fetch(web.port, url(js.FETCHED)).body


def test_http_crawl_of_the_site_misses_the_script_only_pages(web: TestWeb) -> None:
    seen = crawl(js.INDEX, lambda page: http_finds(web.port, page)[0])
    assert seen == js.JS_PAGES - js.SCRIPT_ONLY_LINKS


def crawl(start: str, links_of: Callable[[str], set[str]]) -> set[str]:
    """Every /js/ page reachable from `start` by the links `links_of` finds."""
    seen, queue = {start}, [start]
    while queue:
        for link in links_of(queue.pop()):
            if link.startswith("/js/") and link not in seen:
                seen.add(link)
                queue.append(link)
    return seen


# --- in Chromium --------------------------------------------------------------------------

@dataclass
class Traffic:
    """What a page asked for: test web requests by path (with their resource types) and
    everything else, aborted; WebSockets are refused before connecting."""

    requested: dict[str, str] = field(default_factory=dict)
    aborted: list[str] = field(default_factory=list)
    websockets: list[str] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)  # requests following a redirect off-site

    def route(self, route: Route) -> None:
        request = route.request
        parts = urlsplit(request.url)
        if parts.scheme == "http" and parts.hostname is not None and parts.hostname.endswith(
                ".test"):
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            self.requested[path] = _TYPES.get(request.resource_type, request.resource_type)
            route.continue_()
        else:
            self.aborted.append(request.url)
            route.abort()

    def websocket(self, socket_route: WebSocketRoute) -> None:
        self.websockets.append(socket_route.url)
        socket_route.close()  # never connected to a server

    def subresources(self, page: str) -> dict[str, str]:
        return {path: kind for path, kind in self.requested.items()
                if path != page and path not in _INTERNAL}


@pytest.fixture
def context(browser: Browser, web: TestWeb) -> Iterator[tuple[BrowserContext, Traffic]]:
    traffic = Traffic()
    context = browser.new_context(proxy={"server": f"http://127.0.0.1:{web.port}"},
                                  service_workers="block", viewport={"width": 1280, "height": 720})
    context.route("**/*", traffic.route)
    context.route_web_socket("**/*", traffic.websocket)
    try:
        yield context, traffic
    finally:
        context.close()


def load(context: BrowserContext, path: str, *, scroll: bool = True) -> Page:
    page = context.new_page()
    page.goto(url(path), wait_until="load")
    page.wait_for_load_state("networkidle")
    if scroll:
        scroll_to_bottom(page)
    return page


def scroll_to_bottom(page: Page) -> None:
    for _ in range(20):
        if page.evaluate("window.scrollY + innerHeight >= document.body.scrollHeight"):
            break
        page.mouse.wheel(0, 600)
        page.wait_for_timeout(50)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(200)  # an observer's callback, then its image request
    page.wait_for_load_state("networkidle")


def dom_links(page: Page) -> set[str]:
    hrefs: list[str] = page.eval_on_selector_all("a[href]", "els => els.map(a => a.href)")
    return {urlsplit(href).path for href in hrefs if urlsplit(href).netloc == HOST}


def loaded_images(page: Page) -> set[str]:
    sources: list[str] = page.eval_on_selector_all(
        "img", "els => els.filter(i => i.complete && i.naturalWidth > 0).map(i => i.src)")
    return {urlsplit(src).path for src in sources}


def test_browser_requests_every_listed_resource(
        context: tuple[BrowserContext, Traffic]) -> None:
    browser_context, _ = context
    for page_path_ in sorted(js.JS_PAGES):
        traffic = Traffic()
        browser_context.unroute("**/*")
        browser_context.route("**/*", traffic.route)
        page = load(browser_context, page_path_)
        assert traffic.subresources(page_path_) == js.BROWSER_RESOURCES[page_path_], page_path_
        assert traffic.requested[page_path_] == "document"
        assert not traffic.aborted, page_path_
        page.close()


def test_fetched_content_and_images_appear(context: tuple[BrowserContext, Traffic]) -> None:
    browser_context, _ = context
    page = load(browser_context, js.FETCHED)
    page.wait_for_selector("body[data-ready='1']")
    assert page.locator("p.item").all_text_contents() == [
        f"{js.FETCHED_TEXT}, item {n}" for n in range(len(js.FETCHED_IMAGES))]
    assert loaded_images(page) == set(js.FETCHED_IMAGES)
    assert dom_links(page) == {js.FROM_JSON}


def test_lazy_images_load_only_after_scrolling(context: tuple[BrowserContext, Traffic]) -> None:
    browser_context, traffic = context
    page = load(browser_context, js.LAZY, scroll=False)
    assert set(traffic.subresources(js.LAZY)) == {js.LAZY_EAGER_IMAGE}
    assert loaded_images(page) == {js.LAZY_EAGER_IMAGE}
    scroll_to_bottom(page)
    assert set(traffic.subresources(js.LAZY)) == {js.LAZY_EAGER_IMAGE, *js.LAZY_IMAGES}
    assert loaded_images(page) == {js.LAZY_EAGER_IMAGE, *js.LAZY_IMAGES}


def test_spa_links_exist_only_after_script(context: tuple[BrowserContext, Traffic],
                                           web: TestWeb) -> None:
    browser_context, traffic = context
    routes = {js.SPA, *js.SPA_ROUTES}
    assert not http_finds(web.port, js.SPA)[0]
    page = load(browser_context, js.SPA)
    assert dom_links(page) == routes
    assert page.title() == js.SPA_TITLES[js.SPA]
    documents = [path for path, kind in traffic.requested.items() if kind == "document"]
    # Following a link is a pushState: the route renders with no new page load.
    page.click(f"a[href='{js.SPA_ROUTES[1]}']")
    page.wait_for_selector(f"#app[data-route='{js.SPA_ROUTES[1]}']")
    assert urlsplit(page.url).path == js.SPA_ROUTES[1]
    assert page.title() == js.SPA_TITLES[js.SPA_ROUTES[1]]
    page.wait_for_load_state("networkidle")
    assert [path for path, kind in traffic.requested.items() if kind == "document"] == documents
    assert js.SPA_IMAGES[js.SPA_ROUTES[1]] in loaded_images(page)
    # Each route is a real URL: loaded directly, it renders itself.
    direct = load(browser_context, js.SPA_ROUTES[0])
    assert direct.title() == js.SPA_TITLES[js.SPA_ROUTES[0]]
    assert loaded_images(direct) == {js.SPA_IMAGES[js.SPA_ROUTES[0]]}


def test_noscript_fallback_is_not_what_the_browser_loads(
        context: tuple[BrowserContext, Traffic]) -> None:
    browser_context, traffic = context
    page = load(browser_context, js.NOSCRIPT)
    assert loaded_images(page) == {js.NOSCRIPT_SCRIPT_IMAGE}
    assert js.NOSCRIPT_FALLBACK_IMAGE not in traffic.requested
    assert dom_links(page) == {js.INTERACTIVE}  # <noscript> content is text with script on


def test_fonts_come_from_a_script_inserted_stylesheet(
        context: tuple[BrowserContext, Traffic]) -> None:
    browser_context, traffic = context
    load(browser_context, js.FONTS)
    assert traffic.subresources(js.FONTS) == {js.FONTS_STYLESHEET: "stylesheet",
                                              js.FONT_FILES[0]: "font", js.FONT_FILES[1]: "font"}


def test_browser_crawl_of_the_site_finds_the_script_only_pages(
        context: tuple[BrowserContext, Traffic], web: TestWeb) -> None:
    browser_context, _ = context

    def links_of(path: str) -> set[str]:
        page = load(browser_context, path)
        found = dom_links(page)
        page.close()
        return found

    by_browser = crawl(js.INDEX, links_of)
    assert by_browser == js.JS_PAGES - {js.FALLBACK}  # linked only from <noscript>
    by_http = crawl(js.INDEX, lambda page: http_finds(web.port, page)[0])
    assert by_browser | by_http == js.JS_PAGES
    assert by_browser - by_http == js.SCRIPT_ONLY_LINKS


def test_escape_page_tries_every_target_and_reaches_none(
        context: tuple[BrowserContext, Traffic], web: TestWeb) -> None:
    browser_context, traffic = context
    with socket.socket() as tripwire:  # the "unlisted loopback port": nothing may connect
        tripwire.bind(("127.0.0.1", 0))
        tripwire.listen()
        tripwire.setblocking(False)
        port = tripwire.getsockname()[1]
        tries = js.escapes(port)
        page = load(browser_context, js.escape_path(port), scroll=False)
        page.wait_for_selector("body[data-tried]", state="attached")
        with pytest.raises(BlockingIOError):
            tripwire.accept()
    outcomes = page.evaluate("document.body.dataset.tried").split()
    assert outcomes == ["failed"] * (len(tries.fetches) + 1) + ["closed"] * (
        len(tries.websockets) + 1)
    assert {tries.script, tries.iframe, *tries.fetches} <= set(traffic.aborted)
    assert set(traffic.websockets) == {*tries.websockets, url(tries.same_host_websocket).replace(
        "http:", "ws:")}
    assert tries.redirect in traffic.requested
    # The redirect's target went to the test web (the proxy), which knows no such host.
    assert [record.status for record in web.requests_for("169.254.169.254")] == [404]


# --- the mixed web ------------------------------------------------------------------------

@pytest.mark.unit
def test_script_built_pages_are_about_the_fraction_and_off_by_default() -> None:
    pages = [(f"site{n:04d}.test", page_path(index)) for n in range(10)
             for index in range(SMALL.pages_per_host)]
    built = [page for page in pages if is_script_built(MIXED, *page)]
    assert 0.06 < len(built) / len(pages) < 0.14
    assert not any(is_script_built(SMALL, *page) for page in pages)
    assert not any(path == "/" for _, path in built)
    assert resolve(SMALL, *built[0]).body == render_page(SMALL, *built[0])  # off: ordinary
    plain = next(page for page in pages if page not in built and page[1] != "/")
    assert resolve(MIXED, *plain) == resolve(SMALL, *plain)
    assert resolve(SMALL, built[0][0], data_path(built[0][1])).status == 404


def built_page() -> str:
    return next(page_path(index) for index in range(1, SMALL.pages_per_host)
                if is_script_built(MIXED, HOST, page_path(index)))


def test_script_built_page_links_only_in_the_browser(
        context: tuple[BrowserContext, Traffic], web: TestWeb) -> None:
    path = built_page()
    expected = page_links(MIXED, HOST, path)
    pages, assets = extracted(web.port, path, ResourceType.DOCUMENT)
    assert not pages
    assert "/img/logo.png" not in assets and "/static/site.css" in assets
    with ThreadPoolExecutor(1) as apart:
        data = apart.submit(fetch, web.port, url(data_path(path))).result()
    assert data.status == 200 and data.headers["Content-Type"] == "application/json"
    browser_context, traffic = context
    page = load(browser_context, path)
    page.wait_for_selector("body[data-built='1']")
    hrefs: list[str] = page.eval_on_selector_all("a", "els => els.map(a => a.getAttribute('href'))")
    assert hrefs == expected
    assert traffic.requested[data_path(path)] == "other"
    assert "/img/logo.png" in loaded_images(page)
