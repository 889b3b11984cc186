"""Check browser captures against their replay, and record the scores.

`check_capture` loads one capture's replay (`/web/<timestamp>if_/<url>`: the page at its
capture's second, without the replay's banner, which the capture-time screenshot lacks) in
the browser, compares its full-page screenshot with the capture-time one (read from the blob
store) and its requests with the page's recorded ones (`resources`), and returns the figures.
`check_pages` checks several with one browser and one replay server (the given one, or one
started in-process on a free loopback port for the check) and records each check in the
catalog. The browser reaches that server, and nothing else, as `http://REPLAY_NAME`
(`browser_launch`).

The store is any primary (a local folder or an S3 bucket: the replay and the screenshot are
read through `BlobStore`, nothing is mirrored to disk). A screenshot missing from it or
damaged is the capture's fault: the check is recorded (score 0, the reason) and
`CheckedPage.unreadable` says why. A store that fails (unreachable, refusing) says nothing of
the capture: `StoreFailed`, and that capture's check is not recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from playwright.async_api import Browser, async_playwright

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.blobstore import BlobStore
from archive_pipelines.blobstore.store_errors import (
    BlobIntegrityError,
    BlobNotFound,
    BlobStoreError,
)
from archive_pipelines.catalog import BrowserPage, Catalog, QaCheck
from archive_pipelines.qa.browser_launch import REPLAY_NAME, launch_for_replay
from archive_pipelines.qa.pixel_diff import NotAScreenshot, pixel_score
from archive_pipelines.qa.replay_view import ReplayLoad, view_replay
from archive_pipelines.qa.resources import ExpectedResource, resource_score
from archive_pipelines.qa.scores import qa_check
from archive_pipelines.replay.timestamps import timestamp_of
from archive_pipelines.settings import ReplaySettings

MAX_SCREENSHOT_BYTES = 256 * 1024 * 1024
DEFAULT_LOAD = ReplayLoad()


class ScreenshotUnreadable(ArchiveError):
    """A capture's own screenshot is missing from the store or damaged in it: the check is
    recorded (score 0, the reason as its error) but compared nothing. Exit status 1, as
    `verify` exits for a missing blob."""

    exit_status = 1


class StoreFailed(ArchiveError):
    """The store itself failed (unreachable, refusing, a disk error) reading a capture's
    screenshot: that says nothing of the capture, so its check is not recorded."""


@dataclass(frozen=True)
class CheckedPage:
    """A browser capture, its check, and the check's row in `capture_qa`; `unreadable`: why
    the capture-time screenshot could not be read from the store (None when it was read, or
    the capture has none)."""

    page: BrowserPage
    check: QaCheck
    qa_id: int
    unreadable: str | None = None


@dataclass(frozen=True)
class InProcessReplay:
    """What a replay server started for the check needs (its settings; the banner is not
    shown whatever they say)."""

    settings: ReplaySettings
    data_dir: Path


def replay_path(page: BrowserPage) -> str:
    """The capture's replay without the banner: `/web/<timestamp>if_/<url>`."""
    return f"/web/{timestamp_of(page.fetched_ms)}if_/{page.url}"


async def check_capture(page: BrowserPage, *, catalog: Catalog, store: BlobStore,
                        browser: Browser, origin: str, load: ReplayLoad = DEFAULT_LOAD,
                        tolerance: int | None = None) -> QaCheck:
    """One capture held against its replay on the server at `origin` (`http://host:port`)."""
    check, _unreadable = await _check_capture(page, catalog=catalog, store=store,
                                              browser=browser, origin=origin, load=load,
                                              tolerance=tolerance)
    return check


async def _check_capture(page: BrowserPage, *, catalog: Catalog, store: BlobStore,
                         browser: Browser, origin: str, load: ReplayLoad,
                         tolerance: int | None = None) -> tuple[QaCheck, str | None]:
    """`check_capture`, and why the store could not give the capture-time screenshot."""
    expected = [ExpectedResource(url, status)
                for url, status in await asyncio.to_thread(catalog.qa.expected_resources, page)]
    view = await view_replay(browser, origin + replay_path(page), origin=origin, load=load)
    resources = resource_score(expected, view.answers, origin=origin, leaks=view.leaks)
    problems = [view.error] if view.error else []
    if view.timed_out:
        problems.append(f"the replay did not settle within {load.timeout_s:g} s")
    pixel, unreadable = None, None
    if view.screenshot is not None:
        captured, why, unreadable = await asyncio.to_thread(_screenshot, store, page)
        if captured is None:
            problems.append(why)
        else:
            try:
                kwargs = {} if tolerance is None else {"tolerance": tolerance}
                pixel = (await asyncio.to_thread(pixel_score, captured, view.screenshot,
                                                 **kwargs)).score
            except NotAScreenshot as exc:
                problems.append(str(exc))
    return qa_check(pixel, resources, error="; ".join(problems) or None), unreadable


def check_pages(page_ids: Sequence[int], *, catalog: Catalog, store: BlobStore,
                replay_url: str | None = None, in_process: InProcessReplay | None = None,
                chromium: str | None = None, load: ReplayLoad = DEFAULT_LOAD) -> list[CheckedPage]:
    """Check the browser captures `page_ids` (ids of their page captures) and record each
    check; against the replay server at `replay_url`, or one started for the check from
    `in_process`. Ids that are no browser capture are skipped."""
    if (replay_url is None) == (in_process is None):
        raise ValueError("give replay_url or in_process")
    return asyncio.run(_check_all(page_ids, catalog=catalog, store=store, replay_url=replay_url,
                                  in_process=in_process, chromium=chromium, load=load))


async def _check_all(page_ids: Sequence[int], *, catalog: Catalog, store: BlobStore,
                     replay_url: str | None, in_process: InProcessReplay | None,
                     chromium: str | None, load: ReplayLoad) -> list[CheckedPage]:
    checked: list[CheckedPage] = []
    origin = f"http://{REPLAY_NAME}"
    async with _replay_server(replay_url, in_process, catalog=catalog, store=store) as address, \
            async_playwright() as playwright:
        browser = await launch_for_replay(playwright, replay_host=address[0],
                                          replay_port=address[1], executable=chromium)
        try:
            for page_id in page_ids:
                page = await asyncio.to_thread(catalog.qa.browser_page, page_id)
                if page is None:
                    continue
                check, unreadable = await _check_capture(
                    page, catalog=catalog, store=store, browser=browser, origin=origin, load=load)
                qa_id = await asyncio.to_thread(catalog.qa.record, page.id, check)
                checked.append(CheckedPage(page, check, qa_id, unreadable))
        finally:
            await browser.close()
    return checked


@asynccontextmanager
async def _replay_server(replay_url: str | None, in_process: InProcessReplay | None, *,
                         catalog: Catalog, store: BlobStore) -> AsyncIterator[tuple[str, int]]:
    """(host, port) of the replay server: the one at `replay_url`, or one started here."""
    if replay_url is not None:
        parts = urlsplit(replay_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"the replay server's URL must be http://host:port, not {replay_url!r}")
        yield parts.hostname, parts.port or 80
        return
    assert in_process is not None
    from archive_pipelines.replay.exclusions import Exclusions
    from archive_pipelines.replay.server import ReplayServer, build_replayer

    settings = in_process.settings.model_copy(update={"banner": False})
    replayer = build_replayer(settings, catalog=catalog, store=store, data_dir=in_process.data_dir,
                              withdrawn=Exclusions(settings.exclusions))
    server = ReplayServer(replayer, host="127.0.0.1", port=0, keepalive_s=settings.keepalive_seconds)
    await server.start()
    try:
        yield "127.0.0.1", server.port
    finally:
        await server.stop()


def _screenshot(store: BlobStore, page: BrowserPage) -> tuple[bytes | None, str, str | None]:
    """(the capture-time screenshot's bytes, or None and why not; why the store failed to
    give it, None when it did or the capture has none). A local store or an S3 bucket alike:
    a screenshot missing or damaged (BlobNotFound, BlobIntegrityError) is the capture's
    fault; any other store failure raises StoreFailed."""
    if page.screenshot_sha256 is None:
        return None, "the capture recorded no screenshot body", None
    try:
        with store.open(page.screenshot_sha256, max_size=MAX_SCREENSHOT_BYTES) as stream:
            return stream.read(), "", None
    except BlobNotFound:
        why = (f"the capture-time screenshot (sha256:{page.screenshot_sha256}) is missing "
               "from the store")
    except BlobIntegrityError as exc:
        why = f"the capture-time screenshot cannot be read: {exc}"
    except BlobStoreError as exc:
        raise StoreFailed(f"capture {page.id} of {page.url[:200]} not checked, nothing "
                          f"recorded: the store failed reading its capture-time screenshot "
                          f"(sha256:{page.screenshot_sha256}): {exc}") from None
    return None, why, why
