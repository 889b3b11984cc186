"""One crawler process of several: a CrawlerService that reports to its supervisor over a pipe.

The supervisor starts it with the `spawn` method (a fresh interpreter, nothing inherited
from a threaded parent). It stops on SIGTERM only (the supervisor forwards SIGINT as
SIGTERM, so Ctrl-C in a terminal does not count twice), tells the supervisor its session
and lease owner id, sends its metrics a few times a second and its RunReport at the end,
and stops by itself if the supervisor goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import signal
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from archive_pipelines.settings import StoreSettings
from frontier_service.metrics import CrawlMetrics
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.process import configure_logging, run_crawler
from frontier_service.service.process_gauges import sample_process
from frontier_service.service.service import CrawlerService, RunReport

log = logging.getLogger(__name__)
SNAPSHOT_EVERY_S = 0.25


@dataclass(frozen=True)
class ChildSpec:
    """What a child process needs to run its crawler."""

    index: int
    settings: CrawlerSettings
    store_settings: StoreSettings | None
    log_level: int
    parent_pid: int


@dataclass(frozen=True)
class Started:
    session_id: str
    owner: str  # lease owner id: the supervisor ends its leases if the process dies
    pid: int


@dataclass(frozen=True)
class Snapshot:
    metrics: CrawlMetrics
    cpu_s: float


@dataclass(frozen=True)
class Finished:
    report: RunReport
    cpu_s: float


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child_main(spec: ChildSpec, conn: Connection) -> None:
    """The child process's entry point (a module-level function, so `spawn` can import it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    early_stop: list[int] = []  # SIGTERM before the service's own handler is installed
    signal.signal(signal.SIGTERM, lambda signum, frame: early_stop.append(signum))
    configure_logging(spec.log_level, tag=f"crawler-{spec.index}")
    background: list[asyncio.Task[None]] = []

    def on_started(service: CrawlerService) -> None:
        if early_stop:
            service.request_stop("SIGTERM")
        background.append(asyncio.get_running_loop().create_task(
            _report(service, conn, spec.parent_pid), name="supervisor-report"))

    report = run_crawler(spec.settings, store_settings=spec.store_settings,
                         on_started=on_started, stop_signals=(signal.SIGTERM,))
    _send(conn, Finished(report, cpu_seconds()))
    conn.close()


async def _report(service: CrawlerService, conn: Connection, parent_pid: int) -> None:
    await service.started.wait()
    if not _send(conn, Started(service.session_id, service.owner, os.getpid())):
        service.request_stop("supervisor exited")
    while not service.finished.is_set():
        sample_process(service.metrics)  # open_fds, rss_bytes (summed by the supervisor)
        if not _send(conn, Snapshot(service.metrics, cpu_seconds())) or os.getppid() != parent_pid:
            service.request_stop("supervisor exited")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(service.finished.wait(), SNAPSHOT_EVERY_S)


def _send(conn: Connection, message: Any) -> bool:
    try:
        conn.send(message)
    except OSError:  # the supervisor is gone
        return False
    return True
