"""Headless Chromium for the capture check, started as the crawler starts it: it resolves and
connects nothing by itself, except the replay server's host.

The crawler's switches (frontier_service/browser/chromium.py; a test keeps the two lists
equal, since the domain does not import the crawler) close the ways around the request route:
background networking, component updates, sync, safe browsing, metrics, prefetching, WebRTC's
own UDP. Its host resolver answers NOTFOUND for every name and IP literal but the replay
server's host, so the page's requests reach the replay server (the route lets only those go
on) and nothing else.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from playwright.async_api import Browser, Playwright

CHROMIUM_ENV = "CHROMIUM"
_CANDIDATES = ("chromium", "chromium-browser")

# As the crawler's NO_NETWORK_ARGS, the host resolver rule aside (see `chromium_args`).
NO_NETWORK_SWITCHES: tuple[str, ...] = (
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
    """The Chromium to start: `executable` (the `qa.chromium` setting), else $CHROMIUM, else
    `chromium` on the PATH."""
    found = str(executable) if executable else (
        os.environ.get(CHROMIUM_ENV) or next(filter(None, map(shutil.which, _CANDIDATES)), None))
    if not found:
        raise ChromiumMissing("checking captures needs Chromium: install Debian's package "
                              f"(`apt-get install chromium`), set {CHROMIUM_ENV}=/path/to/chromium "
                              "or qa.chromium in archive.toml")
    if not (os.path.isfile(found) and os.access(found, os.X_OK)):
        raise ChromiumMissing(f"{found} is not an executable Chromium: install Debian's `chromium` "
                              f"or set {CHROMIUM_ENV} (or qa.chromium) to one")
    return found


def chromium_args(replay_host: str) -> list[str]:
    """The launch switches: nothing resolves but `replay_host`; no sandbox as root."""
    host = replay_host.strip("[]")
    args = [f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {host}", *NO_NETWORK_SWITCHES]
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to sandbox as root
    return args


async def launch_for_replay(playwright: Playwright, *, replay_host: str,
                            executable: str | Path | None = None) -> Browser:
    """Headless Chromium that can reach `replay_host` only."""
    return await playwright.chromium.launch(
        executable_path=find_chromium(executable), headless=True, args=chromium_args(replay_host))
