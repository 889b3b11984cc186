"""Finished crawls of the test web that tests examine, and the cleanup of a crawl's Redis keys."""

from __future__ import annotations

import http.client
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from archive_testkit.testweb import RequestRecord, TestWeb
from frontier_service.service.crawler_settings import CrawlerSettings
from frontier_service.service.service import RunReport


@dataclass
class Crawl:
    """A crawl the service ran to the end: its settings, report, what the web answered, and
    the Dagster home its segments were reported to."""

    web: TestWeb
    settings: CrawlerSettings
    report: RunReport
    requests: list[RequestRecord]
    dagster_home: Path


@dataclass(frozen=True)
class Crawled:
    """A finished crawl: its data dir (do not change it: copy it), the web it crawled, what
    the web answered, and the Dagster home its segments were reported to."""

    data_dir: Path
    web: TestWeb
    report: RunReport
    requests: list[RequestRecord]
    dagster_home: Path


def delete_keys(redis_url: str, name: str) -> None:
    """Deletes every Redis key of the crawl `name`."""
    client = redis.Redis.from_url(redis_url)
    try:
        for key in client.scan_iter(match=f"{name}:*", count=1000):
            client.unlink(key)
    finally:
        client.close()


@contextmanager
def unique_crawl_name(redis_url: str, prefix: str) -> Iterator[str]:
    """A crawl name no other test uses (`{prefix}-{10 hex}`); its Redis keys deleted after."""
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    try:
        yield name
    finally:
        delete_keys(redis_url, name)


def refetch(port: int, host: str, path_qs: str) -> tuple[int, bytes]:
    """What the test web answers now (status, body), asked as the crawler asked it."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path_qs, headers={"Host": host})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()
