"""Debian's Chromium, started so that it resolves and connects nothing by itself.

Every request a page makes is routed to the crawl's fetch (page_load.py); these switches close
the ways around the route: the host resolver answers NOTFOUND for every name and IP literal
(preconnect, DNS prefetch, a request the route does not see), background networking, component
updates, sync, safe browsing and metrics are off, and WebRTC may use no UDP of its own.
Service workers are blocked on every context (`new_context`): their fetches bypass the route.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from playwright.async_api import Browser, BrowserContext, Playwright

from archive_pipelines.qa.viewport import CAPTURE_VIEWPORT

CHROMIUM_ENV = "CHROMIUM"
_CANDIDATES = ("chromium", "chromium-browser")

# Each switch closes one way Chromium reaches the network without asking the route.
NO_NETWORK_ARGS: tuple[str, ...] = (
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no name, no IP literal resolves by itself
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--metrics-recording-only",
    "--no-pings",
    "--disable-features=OptimizationHints,Translate,MediaRouter,DialMediaRouteProvider,"
    "AutofillServerCommunication,CertificateTransparencyComponentUpdater,NetworkPrediction",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--force-webrtc-ip-handling-policy",
    "--disable-dev-shm-usage",
)


class ChromiumMissing(RuntimeError):
    """No usable Chromium: the message says what to install or set."""


def find_chromium(executable: str | Path | None = None) -> str:
    """The Chromium to start: `executable`, else $CHROMIUM, else `chromium` on the PATH."""
    found = str(executable) if executable else (
        os.environ.get(CHROMIUM_ENV) or next(filter(None, map(shutil.which, _CANDIDATES)), None))
    if not found:
        raise ChromiumMissing("browser capture needs Chromium: install Debian's package "
                              f"(`apt-get install chromium`) or set {CHROMIUM_ENV}=/path/to/chromium")
    if not (os.path.isfile(found) and os.access(found, os.X_OK)):
        raise ChromiumMissing(f"{found} is not an executable Chromium: install Debian's `chromium` "
                              f"or set {CHROMIUM_ENV} to one")
    return found


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
