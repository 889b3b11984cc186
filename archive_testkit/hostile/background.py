"""Running the hostile site beside a test: in a thread, or as a separate process."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from archive_testkit.hostile.server import HostileConfig, HostileSite
from archive_testkit.testweb.background import TestWebProcess, spawn_server

_START_TIMEOUT_S = 60.0


@contextlib.contextmanager
def serve_hostile(config: HostileConfig | None = None) -> Iterator[HostileSite]:
    """Serve on a free loopback port from a daemon thread for the duration of the block."""
    site = HostileSite(config)
    site.prepare_bombs()
    ready = threading.Event()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def serve() -> None:
        await site.start()
        ready.set()
        try:
            await stop.wait()
        finally:
            await site.stop()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),),
                              name="hostile-site", daemon=True)
    thread.start()
    if not ready.wait(_START_TIMEOUT_S):
        raise RuntimeError("hostile site did not start in time")
    try:
        yield site
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
        loop.close()


@contextlib.contextmanager
def serve_hostile_in_subprocess(config: HostileConfig | None = None, *, port: int = 0,
                                log_path: Path | str | None = None) -> Iterator[TestWebProcess]:
    """Serve from `python -m archive_testkit.hostile` for the duration of the block."""
    config = config or HostileConfig()
    command = [sys.executable, "-m", "archive_testkit.hostile", "--port", str(port),
               "--bomb-bytes", str(config.bomb_bytes),
               "--bombs-per-kind", str(config.bombs_per_kind),
               "--trickle-interval", str(config.trickle_interval_s),
               "--css-kb", str(config.css_kb)]
    if log_path is not None:
        command += ["--log", str(log_path)]
    with spawn_server(command, "hostile site") as running:
        yield running
