"""Helpers for the replay tests: a data dir holding real crawls of the test web (ingested),
a replay server on a real port in a thread of its own, and a plain HTTP client that follows
no redirect."""

from __future__ import annotations

import asyncio
import http.client
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from archive_pipelines.blobstore import open_store
from archive_pipelines.catalog import Capture, Catalog
from archive_pipelines.datadir import initialize
from archive_pipelines.replay.exclusions import Exclusions
from archive_pipelines.replay.replayer import Replayer
from archive_pipelines.replay.server import ReplayServer, build_replayer
from archive_pipelines.replay.timestamps import timestamp_of
from archive_pipelines.settings import ReplaySettings, Settings
from archive_pipelines.surt import urlkey
from archive_testkit.testweb import TestWeb, host_name
from archive_testkit.testweb.asset_pages import GALLERY, SCRIPTED
from frontier_service.service.service import CrawlerService
from tests.frontier_service.service.web import WEB, crawler_settings
from tests.helpers.captures import ingest_all, parts_of
from tests.helpers.crawls import delete_keys

HOST = host_name(WEB, 0)  # the test web's host the replay tests crawl
GALLERY_URL = f"http://{HOST}{GALLERY}"
HOME_URL = f"http://{HOST}/"
SCRIPTED_URL = f"http://{HOST}{SCRIPTED}"


def captures_of(catalog: Catalog, url: str) -> list[Capture]:
    """The replayable captures of `url`, oldest first."""
    with catalog.reading() as tx:
        return tx.replay.timeline(urlkey(url))


def memento_path(capture: Capture, modifier: str = "") -> str:
    """`/web/<its 14-digit timestamp><modifier>/<its URL>`."""
    return f"/web/{timestamp_of(capture.fetched_ms)}{modifier}/{capture.url}"


def crawl_into(data_dir: Path, *, web: TestWeb, redis_url: str, name: str,
               seeds: tuple[str, ...]) -> None:
    """One crawl of `seeds` (their assets, no links followed) into `data_dir`, ingested."""
    settings = crawler_settings(data_dir, redis_url, name, web.port, max_depth=0,
                                per_host_concurrency=8, min_delay_s=0.0,
                                response_time_factor=0.0)
    try:
        # In a thread of its own: the caller may run inside an event loop (Playwright's).
        with ThreadPoolExecutor(1, thread_name_prefix="crawl") as pool:
            pool.submit(asyncio.run, CrawlerService(settings, seeds=seeds).run()).result()
    finally:
        delete_keys(redis_url, name)
    with parts_of(data_dir) as parts:
        ingest_all(parts, data_dir)


def crawled_data_dir(data_dir: Path, *, webs: Sequence[TestWeb], redis_url: str, name: str,
                     seeds: tuple[str, ...]) -> Path:
    """`data_dir` initialized, then one crawl of `seeds` from each of `webs` in turn, each at a
    later second. The webs answer for the same host names: a web of another seed is the
    same site whose pages changed between the crawls."""
    initialize(Settings(data_dir=data_dir))
    for number, web in enumerate(webs):
        if number:
            time.sleep(1.1)  # a later 14-digit timestamp
        crawl_into(data_dir, web=web, redis_url=redis_url, name=f"{name}-{number}", seeds=seeds)
    return data_dir


@contextmanager
def opened_catalog(data_dir: Path) -> Iterator[Catalog]:
    """The catalog of `data_dir`, closed afterwards."""
    catalog = Catalog.open(Settings(data_dir=data_dir).catalog_url)
    try:
        yield catalog
    finally:
        catalog.close()


def make_replayer(data_dir: Path, catalog: Catalog, settings: ReplaySettings | None = None,
                  withdrawn: Exclusions | None = None) -> Replayer:
    store_settings = Settings(data_dir=data_dir).primary_store
    return build_replayer(settings or ReplaySettings(), catalog=catalog,
                          store=open_store(store_settings, data_dir), data_dir=data_dir,
                          withdrawn=withdrawn or Exclusions())


@dataclass
class RunningReplay:
    server: ReplayServer
    loop: asyncio.AbstractEventLoop

    @property
    def port(self) -> int:
        return self.server.port


@contextmanager
def running_replay(replayer: Replayer, *, keepalive_s: float = 15.0) -> Iterator[RunningReplay]:
    """The replay server on 127.0.0.1 (a free port), its loop in a thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="replay-server", daemon=True)
    thread.start()
    server = ReplayServer(replayer, host="127.0.0.1", port=0, keepalive_s=keepalive_s)
    try:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(10)
        yield RunningReplay(server, loop)
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def fetch(port: int, path: str, *, method: str = "GET", headers: dict[str, str] | None = None,
          timeout: float = 20.0) -> Answer:
    """One request to the replay server (`path` sent as it is); redirects not followed."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        connection.close()
