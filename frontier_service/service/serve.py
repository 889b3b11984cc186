"""`frontier-service serve`: the long-running crawler that takes queued crawls.

It polls the catalog's crawl requests (archive_pipelines.crawls.requests) and runs each one
it takes as a child process (the `run` machinery of child.py: a whole CrawlerService that
stops once its parent is gone), up to `max_crawls` at once, all on one Redis (the embedded
one, started once here, or the configured one). Each crawl is named by its crawl_id and keeps
its frontier in `data_dir/crawls/{crawl_id}` (crawl_request_run.py).

Before a child starts, this process readies the crawl as the supervisor does for its
children: the crawl's Redis is checked against its files (rebuilt if lost), the seeds are
queued (already seen on a resumed crawl), and the journals of dead sessions replayed (the
page journals are the data dir's: replayed here, one crawl at a time, so that two children
never race over them). While a child runs, its progress goes into the request every
`heartbeat_s`; when it ends, the request is finished (or failed) with the child's stop report.

Stopping (SIGTERM/SIGINT) drains every child and puts the requests they had not finished
back in the queue (`release_crawl`): the next crawler resumes them at once, and the catalog
does not show a crawl as running that nothing runs. A kill -9 of this process leaves the
requests running: their children notice their parent is gone and drain, and a crawler
started later takes them again once their heartbeat is `stale_after_s` old, resuming each
under the same crawl_id (its leases, checkpoints and journals make that exactly once).
A child that dies without a report is recovered (its leases ended, its journals replayed)
and its request queued again, or failed after `max_attempts`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.exceptions import RedisError

from archive_pipelines.archive_error import ArchiveError, CatalogError
from archive_pipelines.catalog import Catalog, CrawlRequest
from archive_pipelines.crawls.requests import (
    claim_crawl,
    crawler_alive,
    finish_crawl,
    get_crawl,
    heartbeat,
    list_crawls,
    release_crawl,
)
from archive_pipelines.settings import StoreSettings
from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.keys import FrontierKeys
from frontier_service.frontier.machine_state import MachineState
from frontier_service.frontier.redis_conn import open_redis
from frontier_service.frontier.slots import DEFAULT_SLOTS
from frontier_service.frontier.state import FrontierState
from frontier_service.metrics import CrawlMetrics
from frontier_service.recovery.epoch import glob_escape
from frontier_service.recovery.frontier_recovery import FrontierRecovery
from frontier_service.recovery.redis_memory import memory_guard
from frontier_service.service.child import ChildSpec, Finished, Snapshot, Started, child_main
from frontier_service.service.crawl_request_run import (
    CRAWLS_FOLDER,
    BadCrawlRequest,
    earlier_attempts,
    outcome_of,
    progress_of,
    request_settings,
)
from frontier_service.service.crawler_parts import check_data_dir, frontier_config, recover_crashed_runs
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.ended_crawls import crawl_folders, remove_crawl_folder, remove_leftovers
from frontier_service.service.process import on_stop_signals, run_async
from frontier_service.service.seeding import BadSeed, add_seeds
from frontier_service.service.serve_health import ServedCrawl, ServeHealthServer, ServeState
from frontier_service.service.service import RunReport

log = logging.getLogger(__name__)
T = TypeVar("T")

# What a child's run reports when it stopped because it was told to (by us, or because we
# were gone), not because its crawl ended.
INTERRUPTED = ("SIGTERM", "supervisor exited")


@dataclass(frozen=True)
class ServeOptions:
    max_crawls: int = 2  # crawls (child processes) at once
    poll_s: float = 2.0  # look for queued crawls this often
    stale_after_s: float = 60.0  # a running request not heartbeaten this long is taken over
    heartbeat_s: float = 2.0  # progress into the request this often
    exit_when_idle_s: float = 10.0  # a crawl ends once nothing was due or in flight this long
    max_attempts: int = 3  # a crawl whose process died this many times fails

    def validate(self) -> None:
        if self.max_crawls < 1:
            raise ArchiveError(f"--max-crawls must be at least 1, got {self.max_crawls}")
        if self.poll_s <= 0 or self.heartbeat_s <= 0:
            raise ArchiveError("--poll-seconds and the heartbeat interval must be positive")
        if self.stale_after_s <= self.heartbeat_s:
            raise ArchiveError(f"--stale-after ({self.stale_after_s:g} s) must be longer than "
                               f"the heartbeat interval ({self.heartbeat_s:g} s)")
        if self.exit_when_idle_s <= 0:
            raise ArchiveError("--exit-when-idle must be positive: a queued crawl has to end")


@dataclass
class _Crawl:
    """A request this process runs, and its child."""

    request: CrawlRequest
    settings: CrawlerSettings
    process: BaseProcess
    conn: Connection
    before: dict[str, int]  # what earlier attempts reported (added up with this one's)
    owner: str = ""
    metrics: CrawlMetrics | None = None
    report: RunReport | None = None
    signalled: bool = False  # we told it to stop
    lost: bool = False  # the request is not ours any more
    progress: dict[str, Any] = field(default_factory=dict)
    beat_at: float = 0.0
    joined: bool = False  # another machine's crawler runs the request: we only help


class CrawlServer:
    """`await run()` until `request_stop()`; takes queued crawls and runs them."""

    def __init__(self, base: CrawlerSettings, catalog: Catalog, options: ServeOptions, *,
                 store_settings: StoreSettings | None = None) -> None:
        options.validate()
        self.base = base
        self.catalog = catalog
        self.options = options
        self.store_settings = store_settings
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.stopping = asyncio.Event()
        self.stop_reason = ""
        self.finished: list[str] = []  # crawl ids this process ended (finished or failed)
        self._crawls: dict[int, _Crawl] = {}
        self._helped: set[int] = set()  # requests joined once (their end is their owner's)
        self._kept: set[str] = set()  # frontier folders kept for good (failed, or unknown)
        self._events: asyncio.Queue[tuple[_Crawl, Any]] = asyncio.Queue()
        self._redis: Redis | None = None
        self._redis_url = ""
        self.health: ServeHealthServer | None = None  # /healthz and /metrics (serve_health.py)

    def state(self) -> ServeState:
        """What the health endpoint says: the crawls run now and their last figures."""
        return ServeState(worker=self.worker, stopping=self.stopping.is_set(),
                          ended=len(self.finished),
                          crawls=[ServedCrawl(crawl_id=c.request.crawl_id, pid=c.process.pid,
                                              joined=c.joined, metrics=c.metrics)
                                  for c in self._crawls.values()])

    def request_stop(self, reason: str = "stop requested") -> None:
        if not self.stopping.is_set():
            self.stop_reason = reason
            log.info("stopping (%s): draining %d crawls; their requests go back to the queue",
                     reason, len(self._crawls))
            self.stopping.set()
        for crawl in self._crawls.values():
            self._signal(crawl)

    def abort_drain(self) -> None:
        """A second stop signal: the children cancel their in-flight fetches."""
        for crawl in self._crawls.values():
            self._signal(crawl, again=True)

    async def run(self) -> None:
        check_data_dir(self.base.data_dir)
        leftovers = await asyncio.to_thread(remove_leftovers, self.base.data_dir / CRAWLS_FOLDER)
        if leftovers:
            log.info("deleted %d ended crawls' frontier folders a crash had left", leftovers)
        async with open_redis(self.base.redis_url, self.base.data_dir) as (redis, url):
            self._redis, self._redis_url = redis, url
            if self.base.metrics_port >= 0:
                self.health = ServeHealthServer(self.state, port=self.base.metrics_port)
                await self.health.start()
            log.info("crawler %s: taking queued crawls (up to %d at once), Redis %s, health %s",
                     self.worker, self.options.max_crawls, url,
                     self.health.url if self.health is not None else "off")
            try:
                await self._serve()
            finally:
                if self.health is not None:
                    await self.health.stop()
                for crawl in self._crawls.values():  # only if serving itself failed
                    if crawl.process.is_alive():
                        crawl.process.kill()
                with contextlib.suppress(Exception):
                    await self._db(crawler_alive, self.catalog, self.worker, running=0,
                                   stopping=True)
        log.info("crawler %s stopped (%s)", self.worker, self.stop_reason or "done")

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        next_poll = 0.0
        tick = min(self.options.poll_s, self.options.heartbeat_s, 0.5)
        while not self.stopping.is_set() or self._crawls:
            now = loop.time()
            try:
                if now >= next_poll:
                    next_poll = now + self.options.poll_s
                    await self._db(crawler_alive, self.catalog, self.worker,
                                   running=len(self._crawls), stopping=self.stopping.is_set())
                    await self._take_requests()
                    if self.base.machine and not self.stopping.is_set():
                        await self._join_running()
                    await self._remove_finished_folders()
                await self._heartbeats()
                with contextlib.suppress(TimeoutError):
                    crawl, message = await asyncio.wait_for(self._events.get(), tick)
                    await self._on_message(crawl, message)
            except CatalogError as exc:  # the next tick tries again; a crawl runs on meanwhile
                log.warning("the catalog failed (%s); trying again", exc)
                await asyncio.sleep(tick)

    async def _take_requests(self) -> None:
        while not self.stopping.is_set() and len(self._crawls) < self.options.max_crawls:
            request = await self._db(claim_crawl, self.catalog, worker=self.worker,
                                     stale_after_s=self.options.stale_after_s)
            if request is None:
                return
            log.info("took crawl %s (definition %s, attempt %d)", request.crawl_id,
                     request.definition_name, request.attempts)
            try:
                await self._start(request)
            except (BadCrawlRequest, BadSeed) as exc:  # the same every time: it fails now
                await self._start_failed(request, exc)
            except (ArchiveError, RedisError, OSError) as exc:
                if request.attempts >= self.options.max_attempts:
                    await self._start_failed(request, exc)
                    continue
                log.error("crawl %s cannot start now (%s): queued again", request.crawl_id, exc)
                await self._db(release_crawl, self.catalog, request.id, worker=self.worker)
                return  # the next poll tries again

    async def _join_running(self) -> None:
        """Several machines: help with the crawls other machines' crawlers run (those that
        run as machines), each once, as far as `max_crawls` allows."""
        assert self._redis is not None
        running = await self._db(list_crawls, self.catalog, states=["running"])
        for request in running:
            if len(self._crawls) >= self.options.max_crawls:
                return
            if request.id in self._crawls or request.id in self._helped:
                continue
            if await self._redis.get(FrontierKeys(request.crawl_id).slot_count) is None:
                continue  # not (yet) run by machines
            self._helped.add(request.id)
            try:
                settings, _ = request_settings(self.base, request)
                settings = self._child_settings(settings)
                check_data_dir(settings.data_dir, settings.frontier_home)
            except (ArchiveError, OSError) as exc:
                log.warning("cannot join crawl %s: %s", request.crawl_id, exc)
                continue
            log.info("joining crawl %s (run by %s) as machine %s", request.crawl_id,
                     request.claimed_by, self.base.machine)
            self._spawn(request, settings, joined=True)

    def _child_settings(self, settings: CrawlerSettings) -> CrawlerSettings:
        return settings.with_changes(
            redis_url=self._redis_url, metrics_port=-1, recover_on_start=False,
            exit_when_idle_s=self.options.exit_when_idle_s, shard=0, shards=1)

    async def _start_failed(self, request: CrawlRequest, exc: Exception) -> None:
        log.error("crawl %s cannot start: %s", request.crawl_id, exc)
        await self._db(finish_crawl, self.catalog, request.id, worker=self.worker,
                       state="failed", outcome={"stopped_because": f"could not start: {exc}",
                                                "failure": str(exc), "attempt": request.attempts})
        self.finished.append(request.crawl_id)

    async def _start(self, request: CrawlRequest) -> None:
        settings, seeds = request_settings(self.base, request)
        settings = self._child_settings(settings)
        check_data_dir(settings.data_dir, settings.frontier_home)
        async with self._frontier(settings) as frontier:
            await FrontierRecovery(frontier, settings.frontier_home).on_start()
            added = await add_seeds(frontier, settings, seeds)
            await recover_crashed_runs(frontier, settings)
        log.info("crawl %s: %d seeds queued (%d already seen); starting its process",
                 request.crawl_id, added.added, added.duplicate)
        self._spawn(request, settings)

    @contextlib.asynccontextmanager
    async def _frontier(self, settings: CrawlerSettings) -> AsyncIterator[Frontier]:
        assert self._redis is not None
        async with memory_guard(self._redis, self._redis_url, settings.crawl_name, writing=True):
            frontier = await Frontier(self._redis, settings.frontier_home,
                                      frontier_config(settings)).open()
            if settings.machine:  # what it queues goes to the owners' inboxes
                keys = frontier.state.keys
                fixed = await self._redis.get(keys.slot_count)
                frontier.own_slots(MachineState(
                    self._redis, keys, machine=settings.machine,
                    slots=settings.slots or int(fixed or DEFAULT_SLOTS),
                    prefixes=[keys.domain_prefix, settings.host_gates]))
            try:
                yield frontier
            finally:
                frontier.close()

    def _spawn(self, request: CrawlRequest, settings: CrawlerSettings, *,
               joined: bool = False) -> None:
        context = multiprocessing.get_context("spawn")
        receive, send = context.Pipe(duplex=False)
        spec = ChildSpec(request.id, settings, self.store_settings,
                         logging.getLogger().getEffectiveLevel(), os.getpid())
        process = context.Process(target=child_main, args=(spec, send),
                                  name=f"crawl-{request.crawl_id}")
        process.start()
        send.close()  # the child's end: EOF on ours once the child is gone
        crawl = _Crawl(request, settings, process, receive, earlier_attempts(request),
                       joined=joined)
        self._crawls[request.id] = crawl
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._read, args=(crawl, loop), daemon=True,
                         name=f"read-crawl-{request.id}").start()

    def _read(self, crawl: _Crawl, loop: asyncio.AbstractEventLoop) -> None:
        """A thread per child: its messages, then None once it has exited."""
        try:
            while True:
                message = crawl.conn.recv()
                if not _post(loop, self._events.put_nowait, (crawl, message)):
                    break
        except (EOFError, OSError):
            pass
        crawl.process.join()
        crawl.conn.close()
        _post(loop, self._events.put_nowait, (crawl, None))

    async def _on_message(self, crawl: _Crawl, message: Any) -> None:
        if isinstance(message, Snapshot):
            crawl.metrics = message.metrics
        elif isinstance(message, Started):
            crawl.owner = message.owner
        elif isinstance(message, Finished):
            crawl.report, crawl.metrics = message.report, message.report.metrics
        elif message is None:
            del self._crawls[crawl.request.id]
            await self._ended(crawl)

    async def _heartbeats(self) -> None:
        now = asyncio.get_running_loop().time()
        for crawl in list(self._crawls.values()):
            if crawl.lost or now - crawl.beat_at < self.options.heartbeat_s:
                continue
            crawl.beat_at = now
            if crawl.joined:  # its owner writes the request; we stop once it ended
                current = await self._db(get_crawl, self.catalog, crawl.request.crawl_id)
                if current is None or current.state != "running":
                    crawl.lost = True
                    self._signal(crawl)
                continue
            crawl.progress = await self._progress(crawl)
            if not await self._db(heartbeat, self.catalog, crawl.request.id, worker=self.worker,
                                  progress=crawl.progress):
                log.warning("crawl %s is no longer this crawler's (cancelled, or taken by "
                            "another after a stale heartbeat): stopping it", crawl.request.crawl_id)
                crawl.lost = True
                self._signal(crawl)

    async def _progress(self, crawl: _Crawl) -> dict[str, Any]:
        assert self._redis is not None
        try:
            counters = await FrontierState(self._redis, crawl.settings.crawl_name).counters()
        except RedisError as exc:
            log.warning("crawl %s: its counters are unavailable: %s", crawl.request.crawl_id, exc)
            counters = {k: crawl.progress.get(v, 0) for k, v in
                        (("pages_fetched", "pages_ok"), ("fetch_errors", "errors"))}
        return progress_of(counters=counters, metrics=crawl.metrics, before=crawl.before,
                           attempt=crawl.request.attempts, pid=crawl.process.pid)

    async def _ended(self, crawl: _Crawl) -> None:
        request, report = crawl.request, crawl.report
        code = crawl.process.exitcode
        if report is None:
            log.error("crawl %s: its process (pid %s) died (exit code %s): ending its leases "
                      "and recovering its journals", request.crawl_id, crawl.process.pid, code)
            await self._recover(crawl)
        if crawl.lost or crawl.joined:
            return
        progress = await self._progress(crawl)
        if report is None:
            if request.attempts >= self.options.max_attempts:
                await self._finish(crawl, "failed", {
                    **progress, "stopped_because": f"its crawler process died {request.attempts} "
                    f"times (last exit code {code})", "failure": f"exit code {code}"})
            else:
                await self._db(release_crawl, self.catalog, request.id, worker=self.worker)
            return
        if report.stop.run_reason in INTERRUPTED and crawl.signalled:
            await self._db(heartbeat, self.catalog, request.id, worker=self.worker,
                           progress=progress)
            await self._db(release_crawl, self.catalog, request.id, worker=self.worker)
            log.info("crawl %s stopped before its end (%d pages so far): queued again",
                     request.crawl_id, progress["pages"])
            return
        await self._finish(crawl, "failed" if report.failure else "finished",
                           outcome_of(progress, report))

    async def _finish(self, crawl: _Crawl, state: str, outcome: dict[str, Any]) -> None:
        request = crawl.request
        done = await self._db(finish_crawl, self.catalog, request.id, worker=self.worker,
                              state=state, outcome=outcome, progress=_without_run(outcome))
        log.info("crawl %s %s: %s pages, %s", request.crawl_id, state, outcome.get("pages"),
                 outcome.get("stopped_because"))
        if done:
            self.finished.append(request.crawl_id)
            if crawl.settings.machine:
                await self._others_gone(crawl.settings)
            await self._forget(crawl.settings)
            if state == "finished":
                await self._remove_folder(request.crawl_id)

    async def _recover(self, crawl: _Crawl) -> None:
        """A dead child: its leases ended, its journals replayed (as the supervisor does)."""
        try:
            async with self._frontier(crawl.settings) as frontier:
                if crawl.owner:
                    await frontier.state.expire_leases_of(crawl.owner)
                await recover_crashed_runs(frontier, crawl.settings)
        except (ArchiveError, RedisError, OSError) as exc:  # its leases expire on their own
            log.warning("recovering crawl %s failed (%s); its leases expire in %g s",
                        crawl.request.crawl_id, exc, crawl.settings.lease_seconds)

    async def _others_gone(self, settings: CrawlerSettings) -> None:
        """Wait (at most a machine lease and an idle wait) for the other machines' crawl
        processes to leave the ended crawl before its keys go."""
        assert self._redis is not None
        key = FrontierKeys(settings.crawl_name).machines
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.machine_lease_s + self.options.exit_when_idle_s
        while loop.time() < deadline:
            leases = await self._redis.hgetall(key)
            now = time.time()
            if not any(float(until) > now for until in leases.values()):
                return
            await asyncio.sleep(0.5)

    async def _forget(self, settings: CrawlerSettings) -> None:
        """An ended crawl's Redis keys (its seen filter is most of Redis's memory): no one
        resumes it. A finished crawl's frontier folder goes too (`_remove_folder`)."""
        assert self._redis is not None
        try:
            names = [key async for key in self._redis.scan_iter(
                match=f"{glob_escape(settings.crawl_name)}:*", count=1000)]
            for start in range(0, len(names), 500):
                await self._redis.unlink(*names[start:start + 500])
        except RedisError as exc:
            log.warning("crawl %s: its Redis keys stay (%s)", settings.crawl_name, exc)

    async def _remove_folder(self, crawl_id: str) -> None:
        """A finished crawl's frontier folder: history only (ended_crawls.py)."""
        try:
            removed = await asyncio.to_thread(remove_crawl_folder,
                                              self.base.data_dir / CRAWLS_FOLDER, crawl_id)
        except OSError as exc:
            log.warning("crawl %s: its frontier folder stays (%s)", crawl_id, exc)
            return
        if removed is not None:
            log.info("crawl %s: removed its frontier folder (%d files, %d bytes on disk)",
                     crawl_id, removed.files, removed.bytes)

    async def _remove_finished_folders(self) -> None:
        """The frontier folders here of crawls finished elsewhere: one this machine joined
        (its owner finished it), or one that ended while this crawler was down."""
        running = {crawl.request.crawl_id for crawl in self._crawls.values()}
        names = await asyncio.to_thread(crawl_folders, self.base.data_dir / CRAWLS_FOLDER)
        for crawl_id in names:
            if crawl_id in running or crawl_id in self._kept:
                continue
            request = await self._db(get_crawl, self.catalog, crawl_id)
            if request is None or request.state == "failed":  # kept: not ours, or to look at
                self._kept.add(crawl_id)
            elif request.state == "finished":
                await self._remove_folder(crawl_id)

    def _signal(self, crawl: _Crawl, *, again: bool = False) -> None:
        if crawl.process.exitcode is None and crawl.process.pid is not None and (
                again or not crawl.signalled):
            crawl.signalled = True
            with contextlib.suppress(ProcessLookupError):
                os.kill(crawl.process.pid, signal.SIGTERM)

    async def _db(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A catalog call, off the event loop."""
        return await asyncio.to_thread(call, *args, **kwargs)


def _without_run(outcome: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in outcome.items() if k not in ("run", "stopped_because", "failure")}



def run_server(base: CrawlerSettings, catalog: Catalog, options: ServeOptions, *,
               store_settings: StoreSettings | None = None) -> None:
    """Serve until SIGTERM/SIGINT: the first drains the crawls (queued again), a second one
    makes their processes cancel in-flight fetches."""

    async def main() -> None:
        server = CrawlServer(base, catalog, options, store_settings=store_settings)
        on_stop_signals((signal.SIGTERM, signal.SIGINT), first=server.request_stop,
                        second=server.abort_drain, what="the drains")
        await server.run()

    run_async(main(), "asyncio")


def _post(loop: asyncio.AbstractEventLoop, put: Any, item: object) -> bool:
    """Hand `item` to the serving loop from a reader thread; False once the loop is closed
    (serve has ended: nothing is left to hear the child)."""
    try:
        loop.call_soon_threadsafe(put, item)
    except RuntimeError:  # "Event loop is closed"
        return False
    return True
