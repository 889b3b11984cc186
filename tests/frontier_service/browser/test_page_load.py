"""Page loads in real headless Chromium (Debian's, through Playwright) against the test web:
every request the page makes is answered by the crawl's own fetch and recorded with its answer
and body hash; script-built content and lazy images are in the DOM; the screenshot is a PNG;
the per-page allowance refuses the rest; a login cookie is recorded only as a keyed hash."""

from __future__ import annotations

import asyncio
import hashlib
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from archive_pipelines.qa.screenshots import MAX_SCREENSHOT_HEIGHT
from archive_pipelines.qa.viewport import CAPTURE_VIEWPORT
from archive_testkit.testweb import TestWeb, serve_in_background
from archive_testkit.testweb.asset_pages import MANY, MANY_IMAGES, SCRIPTED, SCRIPTED_IMAGES, asset_file
from frontier_service.browser import BrowserSettings, HeaderHasher, PageLoad, header_secret, load_page
from tests.frontier_service.browser.pages import HOST, OWN, WEB, crawl_browser, html, image, page_server

SETTINGS = BrowserSettings(page_timeout_s=20.0, idle_s=0.3, scroll_pause_s=0.1)
HASHER = HeaderHasher(b"k" * 32)


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with serve_in_background(WEB) as running:
        yield running


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_every_request_of_a_scripted_page_is_answered_by_the_crawl_and_recorded(web: TestWeb) -> None:
    url = f"http://{HOST}{SCRIPTED}"

    async def main() -> PageLoad:
        async with crawl_browser(web.port) as (context, fetch):
            return await load_page(context, url, fetch=fetch, settings=SETTINGS, hasher=HASHER)

    web.log.clear()
    load = asyncio.run(main())
    assert load.error is None and not load.timed_out, load.error
    assert load.final_url == url and load.refused == []
    # The script fetched the JSON and inserted its images: the rendered DOM holds them.
    assert load.dom is not None and 'data-items="3"' in load.dom
    assert load.dom.count('class="item"') == len(SCRIPTED_IMAGES)
    by_path = {r.url.removeprefix(f"http://{HOST}"): r for r in load.requests}
    assert set(by_path) == {SCRIPTED, "/assets/data/items.json", *SCRIPTED_IMAGES}
    assert by_path[SCRIPTED].resource_type == "document" and by_path[SCRIPTED].is_navigation
    # <link rel=preload as=fetch> asks first (Chromium calls that "other"); fetch() reuses it.
    assert by_path["/assets/data/items.json"].resource_type in ("fetch", "other")
    assert {by_path[p].resource_type for p in SCRIPTED_IMAGES} == {"image"}
    for path, recorded in by_path.items():
        served = asset_file(path)
        assert served is not None
        assert recorded.status == 200 and recorded.method == "GET"
        assert recorded.body_sha256 == hashlib.sha256(served[0]).hexdigest()
        assert recorded.body_size == len(served[0])
        assert ("Content-Type", served[1]) in recorded.result.response_headers
        assert recorded.started_at > 0 and recorded.elapsed_s >= 0
    # One navigation, a request id each; and the test web saw exactly these requests.
    assert {r.navigation_id for r in load.requests} == {load.navigation_id}
    assert len({r.request_id for r in load.requests}) == len(load.requests)
    assert {r.path_qs for r in web.requests_for(HOST)} == set(by_path)
    assert load.screenshot is not None and png_size(load.screenshot)[0] == 1280


def test_lazy_images_load_when_scrolled_to_and_main_document_redirects_are_followed(
        web: TestWeb) -> None:
    lazy = html("""<!DOCTYPE html><html><body><div style="height: 4000px">tall</div>
<img id="lazy" data-src="late.png" width="16" height="16" alt="">
<script>
new IntersectionObserver((entries, observer) => {
  for (const e of entries) {
    if (e.isIntersecting) { e.target.src = e.target.dataset.src; observer.disconnect(); }
  }
}).observe(document.getElementById("lazy"));
</script></body></html>""")
    pages = {"/old": (301, {"Location": "/lazy/page.html"}, b""), "/lazy/page.html": lazy,
             "/lazy/late.png": image()}

    async def main(settings: BrowserSettings) -> tuple[PageLoad, list[str]]:
        async with page_server(pages) as own, crawl_browser(web.port, own.port) as (context, fetch):
            load = await load_page(context, f"http://{OWN}:{own.port}/old", fetch=fetch,
                                   settings=settings, hasher=HASHER)
            return load, own.asked

    load, asked = asyncio.run(main(SETTINGS))
    assert load.error is None, load.error
    assert load.final_url.endswith("/lazy/page.html")
    assert [(r.url.rsplit("/", 1)[1], r.status) for r in load.requests] == [
        ("old", 301), ("page.html", 200), ("late.png", 200)]
    assert load.requests[0].result.redirects[0].location.endswith("/lazy/page.html")
    assert load.dom is not None and ' src="late.png"' in load.dom
    assert asked == ["/old", "/lazy/page.html", "/lazy/late.png"]
    assert load.screenshot is not None and png_size(load.screenshot)[1] > 4000  # the full page

    unscrolled, asked = asyncio.run(main(BrowserSettings(max_scroll_steps=0, idle_s=0.3)))
    assert unscrolled.dom is not None and ' src="late.png"' not in unscrolled.dom


def test_requests_over_the_page_allowance_are_refused_and_counted(web: TestWeb) -> None:
    settings = BrowserSettings(max_requests_per_page=5, idle_s=0.3)

    async def main() -> PageLoad:
        async with crawl_browser(web.port) as (context, fetch):
            return await load_page(context, f"http://{HOST}{MANY}", fetch=fetch,
                                   settings=settings, hasher=HASHER)

    web.log.clear()
    load = asyncio.run(main())
    images = [r for r in load.requests if r.resource_type == "image"]
    assert len(images) == MANY_IMAGES
    assert len([r for r in images if r.status == 200]) == 5
    assert load.over_allowance == MANY_IMAGES - 5 == len(load.refused)
    assert {r.refused for r in load.refused} == {"over the page's allowance of 5 requests"}
    assert len(web.requests_for(HOST)) == 1 + 5  # the refused ones never reached the web


def test_cookies_reach_the_site_but_are_recorded_only_as_keyed_hashes(
        web: TestWeb, tmp_path: Path) -> None:
    secret = header_secret(tmp_path)
    assert header_secret(tmp_path) == secret and len(secret) == 32
    assert (tmp_path / "secrets" / "browser-headers.key").stat().st_mode & 0o777 == 0o600
    hasher = HeaderHasher(secret)
    page = html('<script>document.cookie = "js=clientside-secret; path=/";'
                'fetch("/echo").then(r => r.text()).then(t => document.body.dataset.echo = t)</script>')
    pages = {"/login.html": (200, {"Content-Type": "text/html",
                                   "Set-Cookie": "session=s3rver-secret; Path=/"}, page[2]),
             "/echo": (200, {"Content-Type": "text/plain"}, b"ok")}

    async def main() -> tuple[PageLoad, dict[str, dict[str, str]]]:
        async with page_server(pages) as own, crawl_browser(web.port, own.port) as (context, fetch):
            load = await load_page(context, f"http://{OWN}:{own.port}/login.html", fetch=fetch,
                                   settings=SETTINGS, hasher=hasher)
            return load, own.headers

    load, received = asyncio.run(main())
    assert load.error is None, load.error
    sent = "session=s3rver-secret; js=clientside-secret"
    assert received["/echo"]["Cookie"] == sent  # the page's session reached the site
    echo = next(r for r in load.requests if r.url.endswith("/echo"))
    assert ("Cookie", hasher.value(sent)) in echo.request_headers
    assert ("Cookie", hasher.value(sent)) in echo.result.request_headers
    assert hasher.value(sent) != HeaderHasher(b"x" * 32).value(sent)  # keyed
    assert hasher.value(sent).startswith("hmac-sha256:")
    login = load.requests[0]
    assert ("Set-Cookie", hasher.value("session=s3rver-secret; Path=/")) in login.result.response_headers
    stored = [value for r in load.requests for headers in (
        r.request_headers, r.result.request_headers, r.result.response_headers) for _, value in headers]
    assert len(stored) > 10
    assert not [value for value in stored if "s3rver-secret" in value or "clientside-secret" in value]


def test_a_very_tall_page_is_shot_to_ten_screens_and_its_dom_kept_whole(web: TestWeb) -> None:
    rows = "".join(f'<div style="height: 100px">row {n}</div>' for n in range(300))  # 30,000 px
    pages = {"/tall.html": html(f"<html><body style='margin: 0'>{rows}</body></html>")}

    async def main() -> PageLoad:
        async with page_server(pages) as own, crawl_browser(web.port, own.port) as (context, fetch):
            return await load_page(context, f"http://{OWN}:{own.port}/tall.html", fetch=fetch,
                                   settings=BrowserSettings(max_scroll_steps=2, idle_s=0.2),
                                   hasher=HASHER)

    load = asyncio.run(main())
    assert load.error is None and load.screenshot is not None and load.dom is not None
    assert png_size(load.screenshot) == (CAPTURE_VIEWPORT[0], MAX_SCREENSHOT_HEIGHT)
    assert "row 299" in load.dom
