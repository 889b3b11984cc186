"""Running the service in a process: event loop choice, signals, logging."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from archive_pipelines.settings import StoreSettings
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.descriptor_limit import ensure_descriptor_limit
from frontier_service.service.service import CrawlerService, RunReport

T = TypeVar("T")
log = logging.getLogger(__name__)


def on_stop_signals(signums: tuple[signal.Signals, ...], *, first: Callable[[str], object],
                    second: Callable[[], object], what: str) -> None:
    """On the running loop: the first of these signals calls `first(name)` (drain and stop),
    any later one `second()` (abort `what`)."""
    loop = asyncio.get_running_loop()
    received = 0

    def on_signal(signum: int) -> None:
        nonlocal received
        received += 1
        name = signal.Signals(signum).name
        if received == 1:
            first(name)
        else:
            log.warning("second %s: aborting %s", name, what)
            second()

    for signum in signums:
        loop.add_signal_handler(signum, on_signal, signum)


def configure_logging(level: int = logging.INFO, tag: str = "") -> None:
    """Log lines to stderr; `tag` (e.g. a child process's name) goes into each line."""
    prefix = f"[{tag}] " if tag else ""
    logging.basicConfig(level=level, stream=sys.stderr,
                        format=f"%(asctime)s %(levelname)s {prefix}%(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    for noisy in ("aiohttp.access", "aiohttp.server", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def loop_name(choice: str) -> str:
    """The event loop `choice` gives: uvloop if asked (or auto and installed), else asyncio."""
    if choice == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        if choice == "uvloop":
            raise RuntimeError("event_loop = uvloop, but uvloop is not installed") from None
        return "asyncio"
    return "uvloop"


def run_async(main: Coroutine[Any, Any, T], event_loop: str = "auto") -> T:
    """asyncio.run on the chosen loop."""
    if loop_name(event_loop) == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)


def run_crawler(settings: CrawlerSettings, *, seeds: tuple[str, ...] = (),
                store_settings: StoreSettings | None = None,
                on_started: Callable[[CrawlerService], None] | None = None,
                stop_signals: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT),
                ) -> RunReport:
    """Run a crawler until a stop signal or a stop condition; a second signal aborts the drain."""

    ensure_descriptor_limit(settings)

    async def main() -> RunReport:
        service = CrawlerService(settings, seeds=seeds, store_settings=store_settings)
        task = asyncio.current_task()
        on_stop_signals(stop_signals, first=service.request_stop,
                        second=task.cancel if task is not None else lambda: None,
                        what="the drain")
        if on_started is not None:
            on_started(service)
        # Imports and settings live as long as the process: keep the collector off them,
        # and collect the young generation less often (a page makes thousands of objects).
        gc.freeze()
        gc.set_threshold(20_000, 20, 20)
        log.info("event loop: %s", loop_name(settings.event_loop))
        return await service.run()

    return run_async(main(), settings.event_loop)
