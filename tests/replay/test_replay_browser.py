"""Replay in a real browser (Debian's Chromium through Playwright): the gallery renders with
its images, stylesheets and fonts from the archive, and every request it makes goes to the
replay server (any other is counted and refused)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route

from archive_pipelines.catalog import Catalog
from archive_testkit.testweb.asset_pages import SCRIPTED_IMAGES
from tests.helpers.chromium import headless_chromium
from tests.helpers.replay import GALLERY_URL, HOST, SCRIPTED_URL, RunningReplay, captures_of, memento_path

SCREENSHOTS_ENV = "UI_SCREENSHOTS_DIR"  # as tests/ui: `make screenshots` sets docs/img


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with headless_chromium("the replay browser tests") as chromium:
        yield chromium


class Traffic:
    """Every request the page made: to the replay server, and elsewhere (refused)."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.replayed: list[str] = []
        self.elsewhere: list[str] = []
        self.statuses: dict[str, int] = {}

    def route(self, route: Route) -> None:
        url = route.request.url
        if url.startswith(self.origin + "/"):
            self.replayed.append(url)
            route.continue_()
        elif url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.elsewhere.append(url)
            route.abort()


def open_replayed(browser: Browser, replay: RunningReplay, path: str) -> tuple[Page, Traffic]:
    origin = f"http://127.0.0.1:{replay.port}"
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    traffic = Traffic(origin)
    context.route("**/*", traffic.route)
    page = context.new_page()
    page.on("response", lambda response: traffic.statuses.__setitem__(response.url,
                                                                       response.status))
    page.goto(origin + path, wait_until="networkidle")
    return page, traffic


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
            asked = [url for url in traffic.statuses if url.endswith(font)]
            assert asked and all(traffic.statuses[url] == 200 for url in asked), font
        failed = {url: status for url, status in traffic.statuses.items()
                  if status >= 400 and "not-an-image" not in url}
        assert failed == {}
        assert page.evaluate("() => document.documentElement.dataset.app") == "1"  # js/app.js ran
        assert traffic.elsewhere == []
        assert any("/assets/img/photo-" in url for url in traffic.replayed)  # srcset picks one
        assert all(f"/web/{memento_path(first).split('/')[2]}" in url or url.endswith("favicon.ico")
                   for url in traffic.replayed if HOST in url)
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
