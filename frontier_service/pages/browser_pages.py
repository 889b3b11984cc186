"""Browser capture in the crawl (`--browser auto|always`): which document pages are loaded in
Chromium after their HTTP fetch, and how such a page is archived and its links followed.

Every document URL is fetched over HTTP first, as without a browser. Its answer decides:
- a page that is not a 2xx HTML page (a redirect, an error, a PDF, a 304 unchanged ...) is
  archived as over HTTP, whatever the mode: a redirect's target is queued like a link;
- `always`: every 2xx HTML page is loaded in the browser;
- `auto`: a 2xx HTML page is loaded when `browser_signals` says it needs the browser, when its
  host is still within its `samples` (pages rendered to check the signals, though none fired),
  or when a sample of its host found links or images its HTTP page did not have ("learnt":
  per host, in this process's memory only; another process, or the next run, learns anew).
  Samples and learnt hosts apply only to pages that run a script (inline or a bundle): a page
  with none looks the same in a browser, so it is never rendered without a signal.
  The reasons go into the record's `browser.signals` (signal names, "sample", "learnt").
The page load is answered its main document from the HTTP fetch in hand (no second request
for it); every other request goes through `fetch` (the crawl's scope, robots and Fetcher).

Politeness: a page load is one dispatched item of its host: its worker holds the host from the
HTTP fetch to the end of the load, and the host's delay counts from the load's end. The page's
subresources are its bounded burst: at most `BrowserSettings.max_requests_per_page` requests
besides the document (the crawl's per-page asset budget; the rest are refused and counted),
fetched as the page asks for them, each judged by scope and robots.txt (a robots.txt that a
subresource's host has not answered yet is fetched then), outside their hosts' delays.

Links: the rendered DOM's page links are queued like any links (depth + 1, scope applies).
The subresources the browser fetched are captured in the page record and not queued again;
assets the DOM names that the browser did not request (srcset alternatives, `<noscript>`
fallbacks ...) are queued as from an HTTP page. A load that fails (no DOM): in `auto` the
HTTP fetch is archived as if the page had not been rendered; in `always` the record is a
browser record with only its document and `browser.error`, and the HTTP page's links and
assets are queued: no URL is lost, none captured twice.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from dataclasses import dataclass

from archive_pipelines.canonical_urls import InvalidURL, try_canonical_url_and_domain
from frontier_service.archiving.archiver import ArchivedPage, Archiver
from frontier_service.browser.crawl_fetch import UrlCheck
from frontier_service.browser.header_hashing import HeaderHasher
from frontier_service.browser.page_load import (
    OVER_ALLOWANCE,
    BrowserRequest,
    BrowserSettings,
    Fetch,
    PageLoad,
    RecordedRequest,
)
from frontier_service.browser.pool import BrowserPool
from frontier_service.browser.signals import browser_signals
from frontier_service.fetch.link_extraction import links_off_loop
from frontier_service.fetch.links import PageLinks
from frontier_service.fetch.result import FetchResult
from frontier_service.fetch.robots import RobotsCache
from frontier_service.fetch.robots_rules import RobotsSource
from frontier_service.frontier.frontier_record import ResourceType
from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.browser_modes import ALWAYS, AUTO, BrowserModes
from frontier_service.pages.held_host import Claimed
from frontier_service.pages.link_buffer import LinkBuffer
from frontier_service.pages.visit_buffer import VisitBuffer
from frontier_service.scope.drops import BEYOND_MAX_DEPTH

log = logging.getLogger(__name__)

RECORDED_OVER_ALLOWANCE = 100  # refusals past a page's allowance that its record lists
SAMPLE = "sample"
LEARNT = "learnt"
_DOM_TYPE = "text/html"
_IMAGE_TYPES = frozenset({"image", "imageset"})


@dataclass(frozen=True)
class Rendered:
    """A page archived from its browser load (or its failure, in `always`)."""

    archived: ArchivedPage
    title: str | None


def robots_check(robots: RobotsCache) -> UrlCheck:
    """A CrawlFetch check: why robots.txt (or the host's refused address) forbids `url`."""

    async def check(url: str) -> str | None:
        try:
            rules = await robots.rules_for(url)
        except InvalidURL as exc:
            return f"invalid URL: {exc}"
        if rules.source is RobotsSource.REFUSED:
            return "address refused: the host's address is outside the crawl's allowed networks"
        if rules.source is RobotsSource.UNREACHABLE:
            return "robots.txt unreachable: the host is not answering"
        return None if rules.can_fetch(url) else "disallowed by robots.txt"

    return check


class DocumentInHand:
    """A `Fetch` that answers each load's main document from the HTTP fetch already made
    (the first main-frame navigation of every navigation id: a load the pool retries is
    answered again) and passes every other request to `fetch`."""

    def __init__(self, fetch: Fetch, document: FetchResult) -> None:
        self.fetch = fetch
        self.document = document
        self._answered: set[str] = set()

    async def __call__(self, request: BrowserRequest) -> FetchResult:
        main_document = request.is_navigation and not request.follow_redirects
        if main_document and request.navigation_id not in self._answered:
            self._answered.add(request.navigation_id)
            return self.document
        return await self.fetch(request)


class BrowserPages:
    """The browser side of the PageProcessor: decides which pages to render and archives them.

    Args:
        pool: started; its loads are bounded by `settings`.
        fetch: the crawl's way out for subresources (CrawlFetch with `robots_check`).
        samples: auto: HTML pages per host rendered without a signal, to learn the host.
    """

    def __init__(self, *, pool: BrowserPool, fetch: Fetch, hasher: HeaderHasher,
                 settings: BrowserSettings, modes: BrowserModes, samples: int,
                 archiver: Archiver, links: LinkBuffer, visits: VisitBuffer,
                 metrics: CrawlMetrics, max_depth: int, fetch_assets: bool = True) -> None:
        self.pool = pool
        self.fetch = fetch
        self.hasher = hasher
        self.settings = settings
        self.modes = modes
        self.samples = samples
        self.archiver = archiver
        self.links = links
        self.visits = visits
        self.metrics = metrics
        self.max_depth = max_depth
        self.fetch_assets = fetch_assets
        self.sampled: Counter[str] = Counter()  # sample renders per host (this process)
        self.learnt: set[str] = set()  # hosts a sample showed to need the browser
        self._restarts = 0

    def reasons(self, item: Claimed, result: FetchResult) -> tuple[str, tuple[str, ...]] | None:
        """(mode, why) if this fetched page is to be rendered, else None."""
        if item.record.kind is not ResourceType.DOCUMENT or not result.ok or not result.is_html:
            return None
        if result.error is not None or result.body is None or result.truncated:
            return None
        mode = self.modes.mode_for(item.domain)
        if mode == ALWAYS:
            return mode, ()
        if mode != AUTO:
            return None
        verdict = browser_signals(result.body, url=result.final_url)
        if verdict.needed:
            return mode, verdict.signals
        if not verdict.scripted:  # no script runs: the browser would see what HTTP saw
            return None
        if item.domain in self.learnt:
            return mode, (LEARNT,)
        if self.sampled[item.domain] < self.samples:
            self.sampled[item.domain] += 1
            return mode, (SAMPLE,)
        return None

    async def capture(self, item: Claimed, result: FetchResult) -> Rendered | None:
        """Render and archive the page if it is to be; None when it was not rendered, or its
        load failed in `auto` (the caller archives the HTTP fetch then)."""
        decided = self.reasons(item, result)
        if decided is None:
            return None
        mode, why = decided
        self.metrics.in_flight += 1
        try:
            load = await self.pool.load(item.record.url, fetch=DocumentInHand(self.fetch, result),
                                        settings=self.settings, hasher=self.hasher)
        finally:
            self.metrics.in_flight -= 1
        self._count_load(load)
        if load.dom is None:
            log.info("browser load of %s failed (%s)%s", item.record.url[:200], load.error,
                     ": archived as fetched over HTTP" if mode == AUTO else "")
            if mode == AUTO:
                return None
            return await self._failed_load(item, result, load=load, why=why)
        return await self._rendered(item, result, load=load, mode=mode, why=why)

    async def _rendered(self, item: Claimed, result: FetchResult, *, load: PageLoad, mode: str,
                        why: tuple[str, ...]) -> Rendered:
        depth = item.record.depth
        document, others = split_document(load)
        dom_links = await links_off_loop(_dom_result(result, load), max_assets=self._budget())
        if SAMPLE in why:
            await self._learn(item, result, load=load, dom_links=dom_links)
        title = None if dom_links is None else dom_links.title
        archived = await self.archiver.archive_browser(
            result, item.record.url, depth, load=load, document_request=document,
            requests=others, mode=mode, signals=why, title=title)
        self._count_page(result, archived)
        if dom_links is not None:
            self._queue_pages(dom_links, depth, found_on=item.domain)
            if self.fetch_assets:
                fetched = {_canonical(r.url) for r in load.requests if r.refused is None}
                for kind, urls in dom_links.assets_by_type().items():
                    rest = [url for url in urls if _canonical(url) not in fetched]
                    self.links.add(rest, depth, found_on=item.domain, kind=kind)
        return Rendered(archived, title)

    async def _failed_load(self, item: Claimed, result: FetchResult, *, load: PageLoad,
                           why: tuple[str, ...]) -> Rendered:
        """`always`: the document and the failure recorded; the HTTP page's links queued."""
        depth = item.record.depth
        document, _ = split_document(load)
        links = await links_off_loop(result, max_assets=self._budget())
        title = None if links is None else links.title
        archived = await self.archiver.archive_browser(
            result, item.record.url, depth, load=load, document_request=document, requests=(),
            mode=ALWAYS, signals=why, title=title)
        self._count_page(result, archived)
        if links is not None:
            self._queue_pages(links, depth, found_on=item.domain)
            if self.fetch_assets:
                for kind, urls in links.assets_by_type().items():
                    self.links.add(urls, depth, found_on=item.domain, kind=kind)
        return Rendered(archived, title)

    async def _learn(self, item: Claimed, result: FetchResult, *, load: PageLoad,
                     dom_links: PageLinks | None) -> None:
        """A sample render that found links or images its HTTP page had not: the host needs
        the browser (this process renders its HTML pages from now on)."""
        http_links = await links_off_loop(result, max_assets=self._budget())
        over_http = set() if http_links is None else {
            _canonical(url) for url in (*http_links.pages, *http_links.assets)}
        rendered = {_canonical(r.url) for r in load.answered if r.resource_type in _IMAGE_TYPES}
        if dom_links is not None:
            rendered.update(_canonical(url) for url in dom_links.pages)
            rendered.update(_canonical(url) for url, kind in zip(
                dom_links.assets, dom_links.asset_types, strict=True) if kind is ResourceType.IMAGE)
        new = sorted(url for url in rendered - over_http if url is not None)
        if new and item.domain not in self.learnt:
            self.learnt.add(item.domain)
            self.metrics.browser_hosts_learnt += 1
            log.info("%s needs the browser: a sample render of %s found %d links or images "
                     "its HTTP page has not (e.g. %s); its HTML pages are rendered from now on",
                     item.domain, item.record.url[:200], len(new), new[0][:200])

    def _queue_pages(self, links: PageLinks, depth: int, *, found_on: str) -> None:
        if depth < self.max_depth:
            self.links.add(links.pages, depth + 1, found_on=found_on)
        elif links.pages:
            self.links.drops.drop(BEYOND_MAX_DEPTH, found_on, links.pages[0],
                                  count=len(links.pages))

    def _budget(self) -> int:
        return self.settings.max_requests_per_page if self.fetch_assets else 0

    def _count_load(self, load: PageLoad) -> None:
        m = self.metrics
        m.browser_pages += 1
        m.browser_failures += load.dom is None
        document, _ = split_document(load)
        m.browser_requests += len(load.requests) - (document is not None)
        m.browser_refused += sum(r.refused is not None for r in load.requests)
        restarts = self.pool.stats().restarts
        self.visits.count("browser_pages")
        if load.dom is None:
            self.visits.count("browser_failures")
        if restarts > self._restarts:
            self.visits.count("browser_restarts", restarts - self._restarts)
            self._restarts = m.browser_restarts = restarts

    def _count_page(self, result: FetchResult, archived: ArchivedPage) -> None:
        m = self.metrics
        m.pages += 1
        m.pages_ok += result.ok
        m.fetch_errors += result.error is not None
        m.body_bytes += archived.bytes
        m.new_blobs += archived.new_blobs


def split_document(load: PageLoad) -> tuple[RecordedRequest | None, list[RecordedRequest]]:
    """(the load's first main-document request, every other request in the order they began).

    Of the requests refused for going over the page's allowance, only the first
    `RECORDED_OVER_ALLOWANCE` are kept (the record's `browser.over_allowance` counts them all):
    a page that asks without end must not make a record without end."""
    document = next((r for r in load.requests
                     if r.is_navigation and r.resource_type == "document"), None)
    others = sorted((r for r in load.requests if r is not document), key=lambda r: r.started_at)
    over = 0
    kept = []
    for request in others:
        if request.refused is not None and request.refused.startswith(OVER_ALLOWANCE):
            over += 1
            if over > RECORDED_OVER_ALLOWANCE:
                continue
        kept.append(request)
    return document, kept


def _dom_result(result: FetchResult, load: PageLoad) -> FetchResult:
    """The rendered DOM as a fetched HTML page at the load's final URL (for its links)."""
    return dataclasses.replace(result, final_url=load.final_url,
                               body=(load.dom or "").encode("utf-8"), content_type=_DOM_TYPE,
                               charset="utf-8", redirects=[], truncated=False, cut_kind=None,
                               body_encoding=None)


def _canonical(url: str) -> str | None:
    parsed = try_canonical_url_and_domain(url)
    return None if parsed is None else parsed[0]
