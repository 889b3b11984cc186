"""Headless Chromium for the capture check, started as the crawler starts it: it resolves and
connects nothing but the replay server.

`NO_NETWORK_SWITCHES` (the crawler's Chromium, frontier_service/browser/chromium.py, starts
with the same ones and its own resolver rule) close the ways around the request route:
background networking, component updates, sync, safe browsing, metrics, prefetching, WebRTC's
own UDP. Its host resolver maps one made-up name, `REPLAY_NAME`, to the replay server's
address and port, and answers NOTFOUND for every other name and every IP literal (the replay
server's own address included): the replayed page is loaded from `http://REPLAY_NAME/...`,
and whatever it asks for elsewhere (a request the route would not stop, a WebSocket) cannot
connect.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright

CHROMIUM_ENV = "CHROMIUM"
REPLAY_NAME = "replay.qa.invalid"  # `.invalid`: a name no resolver answers (RFC 6761)
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


def find_chromium(executable: str | Path | None = None, *, needed_for: str = "checking captures",
                  setting: str = "qa.chromium in archive.toml") -> str:
    """The Chromium to start: `executable` (a setting), else $CHROMIUM, else `chromium` on
    the PATH; ChromiumMissing naming what needs it (`needed_for`) and where to set it."""
    found = str(executable) if executable else (
        os.environ.get(CHROMIUM_ENV) or next(filter(None, map(shutil.which, _CANDIDATES)), None))
    also = f" or {setting}" if setting else ""
    if not found:
        raise ChromiumMissing(f"{needed_for} needs Chromium: install Debian's package "
                              f"(`apt-get install chromium`), set {CHROMIUM_ENV}=/path/to/chromium"
                              f"{also}")
    if not (os.path.isfile(found) and os.access(found, os.X_OK)):
        raise ChromiumMissing(f"{found} is not an executable Chromium: install Debian's `chromium` "
                              f"or set {CHROMIUM_ENV}{also} to one")
    return found


def chromium_args(replay_host: str, replay_port: int) -> list[str]:
    """The launch switches: REPLAY_NAME reaches `replay_host:replay_port`, nothing else
    resolves; no sandbox as root."""
    host = f"[{replay_host.strip('[]')}]" if ":" in replay_host else replay_host
    args = [f"--host-resolver-rules=MAP {REPLAY_NAME} {host}:{replay_port}, MAP * ~NOTFOUND",
            *NO_NETWORK_SWITCHES]
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to sandbox as root
    return args


async def launch_for_replay(playwright: Playwright, *, replay_host: str, replay_port: int,
                            executable: str | Path | None = None) -> Browser:
    """Headless Chromium that reaches the replay server at `replay_host:replay_port` (as
    `http://REPLAY_NAME`) and nothing else."""
    return await playwright.chromium.launch(
        executable_path=find_chromium(executable), headless=True,
        args=chromium_args(replay_host, replay_port))
