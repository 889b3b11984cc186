"""Page loads in headless Chromium, held to the crawl's rules.

`chromium.py` starts Debian's Chromium so that it resolves and connects nothing by itself;
`page_load.load_page` answers every request a page makes from a `fetch` callable (the crawl's
Fetcher, scope and robots: `crawl_fetch.CrawlFetch`), records each one, scrolls, waits for
the network to settle and returns the rendered DOM and a screenshot; `header_hashing` keeps
Cookie and Authorization values out of the records (a keyed hash); `pool.BrowserPool` runs
N contexts of one Chromium, relaunched (and its pages loaded again) when it dies.
"""

from frontier_service.browser.chromium import (
    ChromiumMissing,
    chromium_args,
    find_chromium,
    launch_chromium,
    new_context,
)
from frontier_service.browser.crawl_fetch import CrawlFetch
from frontier_service.browser.header_hashing import HeaderHasher, header_secret
from frontier_service.browser.page_load import (
    BrowserRequest,
    BrowserSettings,
    Fetch,
    PageLoad,
    RecordedRequest,
    load_page,
)
from frontier_service.browser.pool import BrowserPool, PoolClosed, PoolStats

__all__ = [
    "BrowserPool",
    "BrowserRequest",
    "BrowserSettings",
    "ChromiumMissing",
    "CrawlFetch",
    "Fetch",
    "HeaderHasher",
    "PageLoad",
    "PoolClosed",
    "PoolStats",
    "RecordedRequest",
    "chromium_args",
    "find_chromium",
    "header_secret",
    "launch_chromium",
    "load_page",
    "new_context",
]
