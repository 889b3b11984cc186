"""The crawl request protocol: a crawl of a definition is queued as a catalog row; a
long-running crawler (`frontier-service serve`) takes it, says it is alive with its progress
every few seconds, and ends it with an outcome. A crawler that dies stops saying so: once its
heartbeat is `stale_after_s` old another crawler (or the same one restarted) takes the request
again and resumes the crawl under the same `crawl_id`, whose own recovery makes it exactly
once. The catalog is the meeting point, so queuing needs no crawler running and works across
machines on a PostgreSQL catalog."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from archive_pipelines.catalog import Catalog, Crawler, CrawlRequest, utcnow

# A crawler heartbeats every few seconds: one this old is gone.
DEFAULT_STALE_AFTER_S = 60.0


def queue_crawl(catalog: Catalog, definition: dict[str, Any], *, name: str,
                requested_by: str) -> CrawlRequest:
    """One crawl of definition `name` queued; `definition` (JSON-safe) is what the crawler
    will run, as it is now."""
    return catalog.crawl_requests.queue(name=name, definition=definition,
                                        requested_by=requested_by)


def claim_crawl(catalog: Catalog, *, worker: str,
                stale_after_s: float = DEFAULT_STALE_AFTER_S) -> CrawlRequest | None:
    """The next crawl for `worker` to run (a dead crawler's first), or None."""
    return catalog.crawl_requests.claim(worker=worker, stale_after_s=stale_after_s)


def heartbeat(catalog: Catalog, request_id: int, *, worker: str, progress: dict[str, Any]) -> bool:
    """`worker` still runs the crawl; False: it is not `worker`'s any more (stop it)."""
    return catalog.crawl_requests.heartbeat(request_id, worker=worker, progress=progress)


def finish_crawl(catalog: Catalog, request_id: int, *, worker: str, state: str,
                 outcome: dict[str, Any], progress: dict[str, Any] | None = None) -> bool:
    """The crawl ended, `finished` or `failed`, with `outcome` (why it stopped, its counts)."""
    return catalog.crawl_requests.finish(request_id, worker=worker, state=state,
                                         outcome=outcome, progress=progress)


def release_crawl(catalog: Catalog, request_id: int, *, worker: str) -> bool:
    """`worker` shuts down before the crawl ended: queued again for the next crawler."""
    return catalog.crawl_requests.release(request_id, worker=worker)


def cancel_crawl(catalog: Catalog, crawl_id: str) -> CrawlRequest | None:
    """A queued crawl cancelled (a running or ended one is returned unchanged)."""
    return catalog.crawl_requests.cancel(crawl_id)


def list_crawls(catalog: Catalog, *, name: str | None = None,
                states: Sequence[str] | None = None, limit: int = 100) -> list[CrawlRequest]:
    """Crawl requests, newest first."""
    return catalog.crawl_requests.listed(name=name, states=states, limit=limit)


def get_crawl(catalog: Catalog, crawl_id: str) -> CrawlRequest | None:
    return catalog.crawl_requests.get(crawl_id)


def crawler_alive(catalog: Catalog, worker: str, *, running: int, stopping: bool = False) -> None:
    """Crawler `worker` says it is alive (every few seconds, busy or idle)."""
    catalog.crawl_requests.crawler_seen(worker, running=running, stopping=stopping)


@dataclass(frozen=True)
class CrawlerPresence:
    """The crawlers taking requests now, and when any was last seen."""

    crawlers: list[Crawler]
    last_seen: datetime | None

    @property
    def alive(self) -> bool:
        return bool(self.crawlers)

    def describe(self) -> str:
        if self.crawlers:
            names = ", ".join(f"{c.worker} ({c.running} running)" for c in self.crawlers)
            return f"crawlers taking requests: {names}"
        if self.last_seen is None:
            return ("no crawler has ever run on this catalog: start one with "
                    "`frontier-service serve`")
        seen = self.last_seen.strftime("%Y-%m-%d %H:%M:%S UTC")
        return (f"no crawler is running (one was last seen {seen}): start one with "
                "`frontier-service serve`")


def crawler_presence(catalog: Catalog, *, stale_after_s: float = DEFAULT_STALE_AFTER_S,
                     now: datetime | None = None) -> CrawlerPresence:
    """The crawlers seen in the last `stale_after_s` seconds that did not say they stopped."""
    moment = now or utcnow()
    crawlers = catalog.crawl_requests.crawlers(seen_after=moment - timedelta(seconds=stale_after_s))
    return CrawlerPresence(crawlers, catalog.crawl_requests.last_crawler_seen())


def waiting_too_long(catalog: Catalog, *, older_than_s: float,
                     now: datetime | None = None) -> list[CrawlRequest]:
    """Queued requests no crawler took for `older_than_s` seconds, oldest first."""
    cutoff = (now or utcnow()) - timedelta(seconds=older_than_s)
    queued = list_crawls(catalog, states=("queued",), limit=10_000)
    return sorted((r for r in queued if r.queued_at < cutoff), key=lambda r: r.queued_at)
