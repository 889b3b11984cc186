"""PageProcessor: one claimed URL from robots check to archive, links and next fetch time.

Politeness rules carried out here:
- robots.txt is the domain's first request; the page waits a full delay after it. Rules
  loaded from the shared store (dropped from this process's parsed cache, or fetched by
  another process) cost the host no request and no delay: the page is fetched at once.
- a disallowed URL is recorded (page index and visited store), never fetched.
- redirects are not followed inside a fetch: the target is queued like a link, so it
  is deduplicated and waits its host's delay like any URL.
- connection failures and 429/503 leave the URL in place and back off (HostHealth);
  the third failure in a row retires the host. A timeout costs the URL, not the host.
- a decompression bomb (a body cut by its decode ratio) is recorded as cut and costs the
  host a strike the same way: three in a row retire it.

With a validator store (a crawl definition crawled again), a URL whose earlier body has an
ETag or Last-Modified is asked conditionally; a 304 is archived as an unchanged capture of
that body, whose links are read again from the store (this crawl has its own frontier).

With the browser on (`--browser auto|always`), a document answered 2xx HTML may go on to be
loaded in Chromium and archived from that load (browser_pages.py); the host's delay then
counts from the load's end.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass

from archive_pipelines.blobstore import BlobStoreError
from archive_pipelines.canonical_urls import InvalidURL
from archive_pipelines.content_coding import CutKind
from frontier_service.archiving.archiver import ArchivedPage, Archiver
from frontier_service.archiving.page_record import page_record
from frontier_service.archiving.validators import Validators, ValidatorStore, validators_of
from frontier_service.fetch.fetcher import Fetcher
from frontier_service.fetch.link_extraction import links_off_loop
from frontier_service.fetch.links import PageLinks
from frontier_service.fetch.politeness import HostHealth, next_delay
from frontier_service.fetch.result import FetchErrorKind, FetchResult
from frontier_service.fetch.robots import RobotsCache
from frontier_service.fetch.robots_rules import RobotsRules, RobotsSource
from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.visited import VisitedRecord
from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.browser_pages import BrowserPages
from frontier_service.pages.held_host import Claimed, Outcome
from frontier_service.pages.link_buffer import LinkBuffer
from frontier_service.pages.visit_buffer import STATUS_NO_RESPONSE, STATUS_ROBOTS_DISALLOWED, VisitBuffer
from frontier_service.scope.drops import BEYOND_MAX_DEPTH, ROBOTS_DISALLOWED, invalid_reason

log = logging.getLogger(__name__)

_REFUSED_HOST = "address refused: the host's address is outside the crawl's allowed networks"
_BOMB_HOST = "it answered decompression bombs (decode ratio cut) three times in a row"
_BOMB_BACKOFF_S = (1.0, 5.0)  # after the first and second bomb in a row; the third retires

_RETRY_SAME_URL = frozenset({FetchErrorKind.CONNECT})


@dataclass(frozen=True)
class Politeness:
    min_delay_s: float
    max_crawl_delay_s: float
    response_time_factor: float

    def delay(self, rules: RobotsRules | None, response_time_s: float) -> float:
        crawl_delay = rules.crawl_delay() if rules is not None else None
        return next_delay(self.min_delay_s, crawl_delay, self.max_crawl_delay_s,
                          response_time_s=response_time_s, factor=self.response_time_factor)


class PageProcessor:
    def __init__(self, *, frontier: Frontier, fetcher: Fetcher, robots: RobotsCache,
                 archiver: Archiver, links: LinkBuffer, visits: VisitBuffer,
                 metrics: CrawlMetrics, politeness: Politeness, max_depth: int,
                 fetch_assets: bool = True, max_assets_per_page: int = 200,
                 failure_backoff_s: tuple[float, ...] = (5.0, 30.0),
                 validators: ValidatorStore | None = None,
                 browser: BrowserPages | None = None) -> None:
        self.frontier = frontier
        self.fetcher = fetcher
        self.robots = robots
        self.archiver = archiver
        self.links = links
        self.drops = links.drops  # URLs not fetched, by reason (links found here, robots)
        self.visits = visits
        self.metrics = metrics
        self.politeness = politeness
        self.max_depth = max_depth
        self.fetch_assets = fetch_assets
        self.max_assets_per_page = max_assets_per_page
        self.validators = validators  # None: every request unconditional
        self.browser = browser  # None: no page is loaded in a browser (browser_pages.py)
        self.health = HostHealth(failure_backoff_s)
        # Bombs in a row per host: a short back-off (nothing to recover from), retired at the third.
        self.bombs = HostHealth(_BOMB_BACKOFF_S)

    async def process(self, item: Claimed, *, begun_at: float | None = None) -> Outcome:
        """Fetch and handle one URL; `begun_at`: when its start was granted (the record's
        request time; left out, when the fetch begins)."""
        url = item.record.url
        try:
            rules = self.robots.cached_rules(url)
        except InvalidURL as exc:
            self.drops.drop(invalid_reason(url), item.domain, url)
            await self._record_skip(item, f"invalid URL: {exc}", STATUS_NO_RESPONSE)
            return Outcome(time.time(), item.end_offset, solo=True, requested=False)
        if rules is None:
            return await self._load_robots(item, begun_at=begun_at)
        return await self._with_rules(item, rules, begun_at=begun_at)

    async def _with_rules(self, item: Claimed, rules: RobotsRules, *,
                          begun_at: float | None) -> Outcome:
        """Fetch and handle the URL under its origin's known rules."""
        url = item.record.url
        if rules.source is RobotsSource.REFUSED:
            return await self._refused(item, _REFUSED_HOST)
        if rules.source is RobotsSource.UNREACHABLE:  # cached: no request until it expires
            return await self._host_failed(item, rules, None, now=time.time())
        if not rules.can_fetch(url):
            self.metrics.robots_disallowed += 1
            self.drops.drop(ROBOTS_DISALLOWED, item.domain, url)
            await self._record_skip(item, "disallowed by robots.txt", STATUS_ROBOTS_DISALLOWED)
            # Nothing was sent: no delay owed.
            return Outcome(time.time(), item.end_offset, solo=rules.crawl_delay() is not None,
                           requested=False)
        previous = await self._previous(url)
        self.metrics.in_flight += 1
        try:
            result = await self.fetcher.fetch(
                url, follow_redirects=False, max_attempts=1,
                conditional=None if previous is None else previous.request_headers(),
                started_at=begun_at)
        finally:
            self.metrics.in_flight -= 1
        if previous is not None:
            self.metrics.conditional_requests += 1
        return await self._handle(item, rules, result,
                                  unchanged=previous if result.status == 304 else None)

    async def _previous(self, url: str) -> Validators | None:
        """The validators an earlier crawl kept for `url`, if its body is still stored."""
        if self.validators is None:
            return None
        found = await self.validators.get(url)
        if found is None or not found.request_headers():
            return None
        try:
            return found if await self.archiver.has_body(found.sha256) else None
        except (BlobStoreError, OSError):
            return None

    async def _load_robots(self, item: Claimed, *, begun_at: float | None) -> Outcome:
        """Fetch (or load from Redis) the domain's robots.txt; the page waits one delay
        after a request, none after a load from the store (fetched at once)."""
        self.metrics.in_flight += 1
        try:
            rules, requested = await self.robots.load(item.record.url)
        finally:
            self.metrics.in_flight -= 1
        self.metrics.robots_fetches += requested
        if not requested:
            # The host was asked nothing: a lost turn here would be taken again by every
            # claim of a host whose rules were dropped from the parsed cache meanwhile
            # (crawls of more hosts than the cache holds never reached a page).
            return await self._with_rules(item, rules, begun_at=begun_at)
        now = time.time()
        if rules.source is RobotsSource.REFUSED:
            return await self._refused(item, _REFUSED_HOST)
        if rules.source is RobotsSource.UNREACHABLE:
            return await self._host_failed(item, rules, None, now=now)
        delay = self.politeness.delay(rules, 0.0)
        return Outcome(now + delay, item.start_offset, solo=True, delay_s=delay)

    async def _handle(self, item: Claimed, rules: RobotsRules, result: FetchResult, *,
                      unchanged: Validators | None = None) -> Outcome:
        now = time.time()
        if result.error_kind is FetchErrorKind.REFUSED:
            return await self._refused(item, result)
        if result.host_failure:
            return await self._host_failed(item, rules, result, now=now)
        if result.cut_kind is CutKind.DECODE_RATIO:
            return await self._bomb(item, rules, result, now=now)
        self.health.record_success(item.domain)
        self.bombs.record_success(item.domain)
        delay = self.politeness.delay(rules, result.response_time_s or result.elapsed_s)
        rendered = (await self.browser.capture(item, result)
                    if self.browser is not None and unchanged is None else None)
        if rendered is not None:  # the host's delay counts from the end of the page load
            await self._visited(item, result, rendered.archived, title=rendered.title)
            return Outcome(time.time() + delay, item.end_offset,
                           solo=rules.crawl_delay() is not None, delay_s=delay)
        await self._archive(item, result, unchanged=unchanged)
        return Outcome(now + delay, item.end_offset, solo=rules.crawl_delay() is not None,
                       delay_s=delay)

    async def _refused(self, item: Claimed, result: FetchResult | str) -> Outcome:
        """The host's address is out of scope: no retry can change that. Its URL is recorded
        with the reason, the host excluded at once (nothing was sent to it)."""
        reason = (result if isinstance(result, str) else result.error or _REFUSED_HOST)[:200]
        log.warning("not crawling %s: %s", item.domain, reason)
        self.metrics.hosts_retired += 1
        self.visits.count("hosts_refused")
        await self.frontier.state.exclude(item.domain, reason)
        if isinstance(result, str):
            await self._record_skip(item, reason, STATUS_NO_RESPONSE)
        else:
            await self._archive(item, result)
        return Outcome(time.time(), item.end_offset, solo=True, retired=reason, requested=False)

    async def _host_failed(self, item: Claimed, rules: RobotsRules, result: FetchResult | None,
                           *, now: float) -> Outcome:
        """Back off; retry the same URL after connection trouble; retire the host at strike 3."""
        self.metrics.host_failures += 1
        verdict = self.health.record_failure(item.domain)
        delay = max(self.politeness.delay(rules, 0.0), verdict.retry_in_s)
        if verdict.retired:
            self.metrics.hosts_retired += 1
            self.visits.count("hosts_retired")
            await self.frontier.state.exclude(item.domain, "host unreachable")
            if result is not None:
                await self._archive(item, result)
            else:
                await self._record_skip(item, "host unreachable", STATUS_NO_RESPONSE)
            return Outcome(now + delay, item.end_offset, solo=True, retired="host unreachable",
                           delay_s=delay)
        if result is None or result.error_kind in _RETRY_SAME_URL or result.error is None:
            # The URL waits for the host.
            return Outcome(now + delay, item.start_offset, solo=True, delay_s=delay)
        await self._archive(item, result)  # a timeout: this URL is done, the host gets a strike
        return Outcome(now + delay, item.end_offset, solo=True, delay_s=delay)

    async def _bomb(self, item: Claimed, rules: RobotsRules, result: FetchResult,
                    *, now: float) -> Outcome:
        """A decompression bomb (cut by its decode ratio): its URL is done, recorded as cut,
        and the host gets a strike, so a host that answers bombs backs off and is retired at
        the third in a row instead of taking a share of the crawl's CPU and loop as fast as
        it is asked. A good answer in between clears the strikes (one odd file on a real
        site costs only its own fetch and a short pause)."""
        await self._archive(item, result)
        self.metrics.bombs += 1
        verdict = self.bombs.record_failure(item.domain)
        delay = max(self.politeness.delay(rules, result.response_time_s), verdict.retry_in_s)
        if not verdict.retired:
            return Outcome(now + delay, item.end_offset, solo=True, delay_s=delay)
        log.warning("not crawling %s further: %s", item.domain, _BOMB_HOST)
        self.metrics.hosts_retired += 1
        self.visits.count("hosts_retired")
        await self.frontier.state.exclude(item.domain, _BOMB_HOST)
        return Outcome(now + delay, item.end_offset, solo=True, retired=_BOMB_HOST, delay_s=delay)

    async def _archive(self, item: Claimed, result: FetchResult, *,
                       unchanged: Validators | None = None) -> None:
        """Store the body and page record, queue its links, record the visit."""
        depth, kind = item.record.depth, item.record.kind
        budget = self.max_assets_per_page if self.fetch_assets else 0
        # Before archiving: from the page record on, no await until the visit is recorded.
        read = result if unchanged is None else await self._earlier_body(result, unchanged)
        links = (await links_off_loop(read, kind=kind, max_assets=budget)
                 if read.ok else None)
        title = None if links is None else links.title
        if unchanged is not None and title is None:
            title = unchanged.title
        archived = await self.archiver.archive(result, item.record.url, depth, resource_type=kind,
                                               title=title, revisit_of=unchanged)
        metrics = self.metrics
        metrics.unchanged += unchanged is not None
        metrics.pages += 1
        metrics.pages_ok += result.ok
        metrics.fetch_errors += result.error is not None
        metrics.body_bytes += archived.bytes
        metrics.new_blobs += archived.new_blobs
        if links is not None:
            if depth < self.max_depth:
                self.links.add(links.pages, depth + 1, found_on=item.domain)
            elif links.pages:
                self.drops.drop(BEYOND_MAX_DEPTH, item.domain, links.pages[0], count=len(links.pages))
            if self.fetch_assets:
                self._queue_assets(links, depth, found_on=item.domain)
        if result.redirects and result.error is None:  # the target is fetched as what we asked
            self.links.add([result.redirects[-1].location], depth, found_on=item.domain,
                           kind=kind)
        await self._visited(item, result, archived, title=title, unchanged=unchanged)

    async def _visited(self, item: Claimed, result: FetchResult, archived: ArchivedPage, *,
                       title: str | None, unchanged: Validators | None = None) -> None:
        """Record the visit of an archived URL and keep its validators."""
        body_hash = bytes.fromhex(archived.body_sha256[:16]) if archived.body_sha256 else b""
        status = result.status if result.status is not None else STATUS_NO_RESPONSE
        self.visits.record(
            VisitedRecord(item.record.url, status, int(time.time()), body_hash), item.domain,
            ok=result.error is None, response_ms=result.response_time_s * 1000)
        await self._remember(item.record.url, result, archived.body_sha256, title=title,
                             unchanged=unchanged)

    async def _earlier_body(self, result: FetchResult, unchanged: Validators) -> FetchResult:
        """The 304 as the earlier 200 it stands for (its body read from the store), for
        link extraction; the 304 itself when that body cannot be read (no links then)."""
        try:
            body = await self.archiver.read_body(unchanged.sha256,
                                                 max_size=self.fetcher.settings.max_body_bytes)
        except (BlobStoreError, OSError) as exc:
            log.warning("the earlier body of %s is unreadable (%s): its links are not followed",
                        result.url[:200], exc)
            return result
        charset = None
        if unchanged.content_type and "charset=" in unchanged.content_type.lower():
            charset = unchanged.content_type.lower().split("charset=", 1)[1].split(";")[0]
            charset = charset.strip().strip('"') or None
        return dataclasses.replace(result, status=unchanged.status, body=body,
                                   content_type=unchanged.body_type, charset=charset)

    async def _remember(self, url: str, result: FetchResult, sha256: str | None, *,
                        title: str | None, unchanged: Validators | None) -> None:
        """Keep the validators of what was archived, for the next crawl of the definition."""
        if self.validators is None or sha256 is None:
            return
        if unchanged is not None:
            kept: Validators | None = unchanged.revisited(result)
        else:
            kept = validators_of(result, sha256=sha256, title=title)
        if kept is not None:
            await self.validators.put(url, kept)

    def _queue_assets(self, links: PageLinks, depth: int, *, found_on: str) -> None:
        """Queue a page's (or stylesheet's) assets at its depth, each with its kind; those
        past the per-page budget are only counted."""
        if links.assets_over_budget:
            self.metrics.assets_over_budget += links.assets_over_budget
            self.visits.count("assets_over_budget", links.assets_over_budget)
        for kind, urls in links.assets_by_type().items():
            self.links.add(urls, depth, found_on=found_on, kind=kind)

    async def _record_skip(self, item: Claimed, reason: str, status: int) -> None:
        """A URL that was not fetched: a page-index record with the reason, and a visit."""
        url = item.record.url
        result = FetchResult(url=url, final_url=url, status=None, error=reason,
                             started_at=time.time())
        record = page_record(session_id=self.archiver.session_id, page_url=url,
                             depth=item.record.depth, page=(result, None))
        record["requests"] = []  # nothing was sent
        self.archiver.index_writer.add(record)
        self.visits.record(VisitedRecord(url, status, int(time.time())), item.domain, ok=None)
        self.visits.count("robots_disallowed" if status == STATUS_ROBOTS_DISALLOWED else "skipped")
