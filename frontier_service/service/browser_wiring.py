"""The browser side of the crawl built from its parts: the pool's page loads, answered through
the crawl's scope, robots.txt and Fetcher."""

from __future__ import annotations

from frontier_service.browser import BrowserSettings, CrawlFetch
from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.browser_modes import BrowserModes
from frontier_service.pages.browser_pages import BrowserPages, robots_check
from frontier_service.pages.link_buffer import LinkBuffer
from frontier_service.pages.visit_buffer import VisitBuffer
from frontier_service.service.crawler_parts import CrawlerParts
from frontier_service.service.crawler_settings import scope_for


def browser_pages(parts: CrawlerParts, *, links: LinkBuffer, visits: VisitBuffer,
                  metrics: CrawlMetrics) -> BrowserPages | None:
    """The PageProcessor's browser capture, or None when the crawl uses no browser.

    A page's allowance of requests besides its document is the crawl's per-page asset
    budget (`max_assets_per_page`), its time cap `browser_page_timeout_s`."""
    s = parts.settings
    if parts.browser_pool is None or parts.header_hasher is None:
        return None
    fetch = CrawlFetch(parts.fetcher, scope_for(s), check=robots_check(parts.robots))
    settings = BrowserSettings(page_timeout_s=s.browser_page_timeout_s,
                               max_requests_per_page=s.max_assets_per_page)
    return BrowserPages(pool=parts.browser_pool, fetch=fetch, hasher=parts.header_hasher,
                        settings=settings, modes=BrowserModes(s.browser, s.browser_by_domain),
                        samples=s.browser_samples, archiver=parts.archiver, links=links,
                        visits=visits, metrics=metrics, max_depth=s.max_depth,
                        fetch_assets=s.fetch_assets)
