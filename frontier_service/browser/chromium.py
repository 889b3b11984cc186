"""Debian's Chromium, started so that it resolves and connects nothing by itself.

Every request a page makes is routed to the crawl's fetch (page_load.py); these switches close
the ways around the route: the host resolver answers NOTFOUND for every name and IP literal
(preconnect, DNS prefetch, a request the route does not see), background networking, component
updates, sync, safe browsing and metrics are off, and WebRTC may use no UDP of its own.
Service workers are blocked on every context (`new_context`): their fetches bypass the route.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from playwright.async_api import Browser, BrowserContext, Playwright

from archive_pipelines.qa.browser_launch import NO_NETWORK_SWITCHES
from archive_pipelines.qa.browser_launch import ChromiumMissing as ChromiumMissing  # re-exported
from archive_pipelines.qa.browser_launch import find_chromium as find_qa_chromium
from archive_pipelines.qa.viewport import CAPTURE_VIEWPORT

# Each switch closes one way Chromium reaches the network without asking the route: no name
# and no IP literal resolves by itself, and the switches QA's replay check starts with too.
NO_NETWORK_ARGS: tuple[str, ...] = ("--host-resolver-rules=MAP * ~NOTFOUND", *NO_NETWORK_SWITCHES)


def find_chromium(executable: str | Path | None = None) -> str:
    """The Chromium to start: `executable`, else $CHROMIUM, else `chromium` on the PATH."""
    return find_qa_chromium(executable, needed_for="browser capture", setting="")


def chromium_args(extra: Sequence[str] = ()) -> list[str]:
    """The launch switches: no network of Chromium's own, no sandbox when running as root."""
    args = [*NO_NETWORK_ARGS, *extra]
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to sandbox as root
    return args


async def launch_chromium(playwright: Playwright, *, executable: str | Path | None = None,
                          extra_args: Sequence[str] = ()) -> Browser:
    """Headless Chromium with `chromium_args`; ChromiumMissing if there is none."""
    return await playwright.chromium.launch(
        executable_path=find_chromium(executable), headless=True, args=chromium_args(extra_args))


async def new_context(browser: Browser, *, storage_state: str | Path | None = None,
                      viewport: tuple[int, int] = CAPTURE_VIEWPORT) -> BrowserContext:
    """A context whose service workers are blocked; `storage_state`: a login profile (its
    cookies are sent, and recorded only as keyed hashes). `viewport`: the capture's window,
    which QA replays the capture in (archive_pipelines.qa)."""
    return await browser.new_context(
        service_workers="block", storage_state=storage_state, accept_downloads=False,
        viewport={"width": viewport[0], "height": viewport[1]})
