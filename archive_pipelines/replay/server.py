"""The replay server's lifecycle: built from settings, started on a port, stopped on
SIGTERM/SIGINT (in-flight answers finish, up to a grace period).

Per-connection resources are bounded: a request line or header over 16 KB is answered 400
by the HTTP parser before any handler runs, a request body is refused past 64 KB (replay
takes none), a connection that sends no whole request within `keepalive_seconds` (idle, or
trickling its headers) is closed, a response whose
client accepts no chunk within `send_timeout_seconds` is abandoned, and the worker threads
that read the catalog and the store are a fixed pool, so many connections queue for them
rather than multiply them. The open-files limit is raised to its hard limit at start, so
thousands of idle connections do not starve new ones.
"""

from __future__ import annotations

import asyncio
import resource
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from aiohttp import web

from archive_pipelines.blobstore import BlobStore
from archive_pipelines.catalog import Catalog
from archive_pipelines.http_site import listen
from archive_pipelines.replay.app import make_app
from archive_pipelines.replay.archive import ReplayArchive
from archive_pipelines.replay.body_cache import BodyCache
from archive_pipelines.replay.capture_headers import CaptureHeaders
from archive_pipelines.replay.exclusions import Exclusions
from archive_pipelines.replay.metrics import ReplayMetrics
from archive_pipelines.replay.replayer import Replayer
from archive_pipelines.settings import ReplaySettings

MAX_LINE = 16 * 1024


def build_replayer(settings: ReplaySettings, *, catalog: Catalog, store: BlobStore,
                   data_dir: Path, withdrawn: Exclusions) -> Replayer:
    """The replay's parts from its settings (the caller closes `replayer.pool`)."""
    return Replayer(
        archive=ReplayArchive(catalog, withdrawn=withdrawn,
                              cache_seconds=settings.lookup_cache_seconds,
                              cache_entries=settings.lookup_cache_entries),
        headers=CaptureHeaders(data_dir, store, capacity=settings.header_cache_records),
        bodies=BodyCache(store, capacity=settings.body_cache_bytes,
                         max_item=settings.body_cache_item_bytes),
        pool=ThreadPoolExecutor(settings.worker_threads, thread_name_prefix="replay"),
        metrics=ReplayMetrics(), banner=settings.banner,
        send_timeout_s=settings.send_timeout_seconds)


class ReplayServer:
    """The app on a TCP site; `port` 0 picks a free one (`start` returns it)."""

    def __init__(self, replayer: Replayer, *, host: str, port: int,
                 keepalive_s: float = 15.0) -> None:
        self.replayer = replayer
        self.host = host
        self.requested_port = port
        self.keepalive_s = keepalive_s
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> int:
        raise_open_files_limit()
        runner = web.AppRunner(make_app(self.replayer), access_log=None,
                               keepalive_timeout=self.keepalive_s, max_line_size=MAX_LINE,
                               max_field_size=MAX_LINE, shutdown_timeout=10.0)
        self.port = await listen(runner, self.host, self.requested_port, backlog=1024)
        self._runner = runner
        return self.port

    async def stop(self) -> None:
        self.replayer.metrics.stopping = True
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
        self.replayer.pool.shutdown(wait=False, cancel_futures=True)


def raise_open_files_limit() -> int:
    """The soft RLIMIT_NOFILE raised to the hard one; the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1 << 20)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            return soft
    return hard


async def serve_until_stopped(server: ReplayServer, stop: asyncio.Event) -> None:
    """Serve until `stop` is set, then stop (answers in flight finish first)."""
    await server.start()
    try:
        await stop.wait()
    finally:
        await server.stop()
