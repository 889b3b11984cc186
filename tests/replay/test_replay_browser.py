"""Replay in a real browser (Debian's Chromium through Playwright): the gallery renders with
its images, stylesheets and fonts from the archive, a page crawled twice shows each version at
its own time, a page of an adopted ArchiveBox snapshot renders from its WARC, and every request
a page makes goes to the replay server (any other is counted and refused)."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Request, Response, Route

from archive_pipelines.catalog import Capture, Catalog
from archive_pipelines.replay.banner import BANNER_ID, capture_time_text
from archive_pipelines.replay.memento import http_date
from archive_pipelines.replay.timestamps import timestamp_of
from archive_testkit.testweb import TestWeb, resolve
from archive_testkit.testweb.asset_pages import SCRIPTED_IMAGES
from tests.helpers.adopted import adopted_collection
from tests.helpers.chromium import headless_chromium
from tests.helpers.replay import (
    GALLERY_URL,
    HOME_URL,
    HOST,
    SCRIPTED_URL,
    RunningReplay,
    captures_of,
    fetch,
    make_replayer,
    memento_path,
    opened_catalog,
    running_replay,
)

SCREENSHOTS_ENV = "UI_SCREENSHOTS_DIR"  # as tests/ui: `make screenshots` sets docs/img


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with headless_chromium("the replay browser tests") as chromium:
        yield chromium


class Traffic:
    """Every request the page made: to the replay server, and elsewhere (refused). A route
    sees only the first URL of a redirect chain: the requests that follow a redirect are
    seen as requests, and counted elsewhere too when they leave the replay server."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.replayed: list[str] = []
        self.elsewhere: list[str] = []
        self.statuses: dict[str, int] = {}
        self.headers: dict[str, dict[str, str]] = {}

    def route(self, route: Route) -> None:
        url = route.request.url
        if self.stays(url):
            if not url.startswith(("data:", "blob:")):
                self.replayed.append(url)
            route.continue_()
        else:
            self._left(url)
            route.abort()

    def request(self, request: Request) -> None:
        if not self.stays(request.url):
            self._left(request.url)

    def response(self, response: Response) -> None:
        self.statuses[response.url] = response.status
        self.headers[response.url] = response.headers

    def stays(self, url: str) -> bool:
        return url.startswith((self.origin + "/", "data:", "blob:"))

    def _left(self, url: str) -> None:
        if url not in self.elsewhere:
            self.elsewhere.append(url)


def open_replayed(browser: Browser, replay: RunningReplay, path: str) -> tuple[Page, Traffic]:
    origin = f"http://127.0.0.1:{replay.port}"
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    traffic = Traffic(origin)
    context.route("**/*", traffic.route)
    context.on("request", traffic.request)
    page = context.new_page()
    page.on("response", traffic.response)
    page.goto(origin + path, wait_until="networkidle")
    return page, traffic


MEMENTO_URL = re.compile(r"/web/(\d{14})[a-z_]*/(.+)$")


def times_outside_crawl(catalog: Catalog, page: Capture, replayed: list[str]) -> list[str]:
    """The replayed URLs of the test host whose timestamp is neither the page's nor that of a
    capture (of any URL the page asked for) made by the page's own crawl session."""
    asked = [(match.group(1), match.group(2), url) for url in replayed if HOST in url
             and not url.endswith("favicon.ico") and (match := MEMENTO_URL.search(url))]
    session_times = {timestamp_of(page.fetched_ms)}
    for _, target, _ in asked:
        session_times |= {timestamp_of(capture.fetched_ms)
                          for capture in captures_of(catalog, target)
                          if capture.session_id == page.session_id}
    return [url for time, _, url in asked if time not in session_times]


def test_the_gallery_renders_from_the_archive_and_nothing_leaves_it(
        browser: Browser, replay: RunningReplay, replay_catalog: Catalog) -> None:
    first = captures_of(replay_catalog, GALLERY_URL)[0]
    page, traffic = open_replayed(browser, replay, memento_path(first))
    try:
        assert page.title() == "Gallery"
        broken = page.evaluate("""() => [...document.images]
            .filter(i => !i.src.startsWith('data:') && i.type !== 'text')
            .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.currentSrc || i.src)""")
        assert broken == []
        images = page.evaluate("() => document.images.length")
        assert images >= 4
        # The stylesheets (and the ones they import) applied, their fonts asked of the archive
        # and answered (the test web's font files are not real fonts: the browser rejects them).
        assert page.evaluate("() => document.styleSheets.length") >= 2
        assert page.evaluate("() => getComputedStyle(document.body).fontFamily").startswith("Body")
        for font in ("/assets/fonts/body.woff2",):  # (Head: no element of the page uses it)
            # Asked at the stylesheet's time: answered, or redirected to the font's own
            # second when the crawl fetched it a second later, and answered there.
            asked = {url: traffic.statuses[url] for url in traffic.statuses if url.endswith(font)}
            assert 200 in asked.values(), (font, asked)
            assert all(status in (200, 302) for status in asked.values()), (font, asked)
        failed = {url: status for url, status in traffic.statuses.items()
                  if status >= 400 and "not-an-image" not in url}
        assert failed == {}
        assert page.evaluate("() => document.documentElement.dataset.app") == "1"  # js/app.js ran
        assert traffic.elsewhere == []
        assert any("/assets/img/photo-" in url for url in traffic.replayed)  # srcset picks one
        # Each request carries the page's time, or the exact time of the capture that named
        # it (a stylesheet redirected to its own second rewrites its imports with that one):
        # all of the page's own crawl, none of the second crawl's.
        assert times_outside_crawl(replay_catalog, first, traffic.replayed) == []
        shots = os.environ.get(SCREENSHOTS_ENV)
        if shots:
            page.screenshot(path=str(Path(shots) / "replay-gallery.png"), full_page=True)
    finally:
        page.context.close()


def test_a_followed_link_lands_on_the_nearest_capture(
        browser: Browser, replay: RunningReplay, replay_catalog: Catalog) -> None:
    first = captures_of(replay_catalog, GALLERY_URL)[0]
    home = captures_of(replay_catalog, f"http://{HOST}/")
    nearest = min(home, key=lambda c: (abs(c.fetched_ms - first.fetched_ms), c.fetched_ms))
    page, traffic = open_replayed(browser, replay, memento_path(first))
    try:
        with page.expect_navigation(wait_until="networkidle"):
            page.click("text=home")
        assert page.url == f"{traffic.origin}{memento_path(nearest)}"
        assert traffic.statuses[page.url] == 200
        assert traffic.elsewhere == []
        shots = os.environ.get(SCREENSHOTS_ENV)
        if shots:
            page.screenshot(path=str(Path(shots) / "replay-page.png"))
    finally:
        page.context.close()


def test_a_page_its_script_builds_shows_the_json_and_images_it_fetched(
        browser: Browser, replay: RunningReplay, replay_catalog: Catalog) -> None:
    """The script fetches `/assets/data/items.json` (root-relative: the Referer fallback sends
    it into the archive at the page's time) and inserts the images it lists."""
    first = captures_of(replay_catalog, SCRIPTED_URL)[0]
    page, traffic = open_replayed(browser, replay, memento_path(first))
    try:
        page.wait_for_function("() => document.body.dataset.items === '3'")
        page.wait_for_function("""() => [...document.querySelectorAll('img.item')]
            .every(i => i.complete && i.naturalWidth > 0)""")
        assert traffic.elsewhere == []
        for path in ("/assets/data/items.json", *SCRIPTED_IMAGES):
            assert f"{traffic.origin}{path}" in traffic.replayed, path  # as the script asked
            assert traffic.statuses[f"{traffic.origin}{path}"] == 302  # sent into the archive
    finally:
        page.context.close()


def _headline(web: TestWeb) -> str:
    """The `<h1>` of the home page `web` serves."""
    served = resolve(web.config, HOST, "/").body.decode()
    found = re.search(r"<h1>(.*?)</h1>", served, re.S)
    assert found, served[:300]
    return html.unescape(found.group(1))


def _shows_its_time(page: Page, traffic: Traffic, fetched_ms: int) -> None:
    """The banner and `Memento-Datetime` of the page `page` shows name the capture's time."""
    assert traffic.headers[page.url]["memento-datetime"] == http_date(fetched_ms)
    banner = page.locator(f"#{BANNER_ID}").inner_text()
    assert capture_time_text(timestamp_of(fetched_ms)) in banner, banner


def test_a_page_crawled_twice_shows_each_version_at_its_own_time(
        browser: Browser, captures_web: TestWeb, changed_web: TestWeb,
        changed_data: Path) -> None:
    """The home page changed between its two crawls (the second from the test web under
    another seed): each capture renders the text its crawl saw, at its own time."""
    headlines = [_headline(web) for web in (captures_web, changed_web)]
    assert headlines[0] != headlines[1], "the changed web serves another home page"
    with opened_catalog(changed_data) as catalog, running_replay(
            make_replayer(changed_data, catalog)) as replay:
        captures = captures_of(catalog, HOME_URL)
        assert len(captures) == 2
        assert timestamp_of(captures[0].fetched_ms) < timestamp_of(captures[1].fetched_ms)
        for capture, headline, other in zip(captures, headlines, reversed(headlines),
                                            strict=True):
            page, traffic = open_replayed(browser, replay, memento_path(capture))
            try:
                assert page.url == f"{traffic.origin}{memento_path(capture)}"  # not redirected
                assert page.locator("h1").inner_text() == headline
                assert page.title() == headline
                assert other not in page.locator("body").inner_text()
                _shows_its_time(page, traffic, capture.fetched_ms)
                assert traffic.elsewhere == []
            finally:
                page.context.close()


_LOADED = """() => [...document.images].filter(i => !i.src.startsWith('data:'))
    .map(i => [i.currentSrc || i.src, i.complete && i.naturalWidth > 0])"""
_ARCHIVED_IMAGE = re.compile(r"/web/[0-9]{14}im_/(https?://.+)")


def test_a_page_of_an_adopted_snapshots_warc_renders_with_its_images(
        browser: Browser, tmp_path: Path) -> None:
    data = tmp_path / "data"
    responses = adopted_collection(data, snapshots=4, seed=31)
    start = next(n for n, r in enumerate(responses) if r.first and r.content_type == "text/html")
    end = next((n for n, r in enumerate(responses) if r.first and n > start), len(responses))
    page_url = responses[start].url
    recorded_images = {r.url for r in responses[start:end] if r.content_type == "image/png"}
    assert len(recorded_images) >= 2, "the page's WARC holds its images"
    with opened_catalog(data) as catalog, running_replay(make_replayer(data, catalog)) as replay:
        capture = captures_of(catalog, page_url)[0]
        archived = fetch(replay.port, memento_path(capture, "id_")).text
        title = re.search(r"<title>(.*?)</title>", archived, re.S)
        assert title, archived[:300]
        page, traffic = open_replayed(browser, replay, memento_path(capture))
        try:
            assert page.title() == html.unescape(title.group(1))
            _shows_its_time(page, traffic, capture.fetched_ms)
            page.wait_for_function(f"() => ({_LOADED})().every(([, loaded]) => loaded)",
                                   timeout=10_000)
            shown = page.evaluate(_LOADED)
            originals = set()
            for src, _loaded in shown:
                found = _ARCHIVED_IMAGE.search(src)
                assert found and src.startswith(traffic.origin + "/"), src
                originals.add(found.group(1))
            assert originals == recorded_images
            frames = page.frames[1:]  # its embedded part, replayed in an iframe
            assert frames and all(frame.evaluate(_LOADED) and all(
                loaded for _, loaded in frame.evaluate(_LOADED)) for frame in frames)
            failed = {url: status for url, status in traffic.statuses.items()
                      if status >= 400 and not url.endswith("favicon.ico")}
            assert failed == {}
            assert traffic.elsewhere == []
            assert len(traffic.replayed) >= 6  # the page, stylesheets, script, images, iframe
        finally:
            page.context.close()
