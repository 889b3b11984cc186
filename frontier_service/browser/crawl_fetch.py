"""The browser's only way out: each request judged by the crawl's scope (and robots), then
fetched by the crawl's Fetcher, whose resolver judges every address before connecting.

Redirects are followed here one hop at a time, each target judged again, so a redirect cannot
lead the browser out of scope either.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import replace

from archive_pipelines.canonical_urls import InvalidURL, domain_key
from frontier_service.browser.page_load import BrowserRequest, refused_result
from frontier_service.fetch.fetcher import Fetcher
from frontier_service.fetch.result import FetchResult, RedirectHop
from frontier_service.scope.crawl_scope import Scope

# Sent on from the browser: a login profile's session (the record keeps only keyed hashes).
FORWARDED_HEADERS = frozenset({"cookie", "authorization"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})

# Why the crawl may not fetch a URL (robots.txt, a host retired ...), or None.
UrlCheck = Callable[[str], Awaitable[str | None]]


class CrawlFetch:
    """A `page_load.Fetch` over the crawl's Fetcher and Scope.

    Args:
        fetcher: started; its resolver (CrawlResolver) refuses addresses outside the policy.
        scope: allowed domains and the addresses of IP-literal hosts.
        check: more reasons to refuse a URL (robots.txt), asked after the scope.
        forwarded_headers: the browser's headers sent on (lowercase names).
        max_redirects: hops followed for a request other than the main document.
    """

    def __init__(self, fetcher: Fetcher, scope: Scope, *, check: UrlCheck | None = None,
                 forwarded_headers: Collection[str] = FORWARDED_HEADERS,
                 max_redirects: int = 5) -> None:
        self.fetcher = fetcher
        self.scope = scope
        self.check = check
        self.forwarded = frozenset(name.lower() for name in forwarded_headers)
        self.max_redirects = max_redirects

    async def __call__(self, request: BrowserRequest) -> FetchResult:
        if request.method != "GET":
            return refused_result(request.url, f"method {request.method}: the crawl only GETs")
        sent = [(n, v) for n, v in request.headers if n.lower() in self.forwarded] or None
        began = time.monotonic()
        url, hops = request.url, list[RedirectHop]()
        while True:
            reason = await self.refusal(url)
            if reason is not None:
                return replace(refused_result(request.url, reason), final_url=url, redirects=hops)
            result = await self.fetcher.fetch(url, follow_redirects=False,
                                              conditional=sent if not hops else None)
            hops.extend(result.redirects)
            target = result.redirects[-1].location if result.redirects else None
            if (not request.follow_redirects or result.status not in REDIRECTS or target is None
                    or len(hops) > self.max_redirects or result.error is not None):
                return replace(result, url=request.url, redirects=hops,
                               elapsed_s=time.monotonic() - began)
            url = target

    async def refusal(self, url: str) -> str | None:
        """Why the crawl may not fetch `url` (scope, then `check`), or None."""
        try:
            domain = domain_key(url)
        except InvalidURL as exc:
            return f"invalid URL: {exc}"
        reason = self.scope.domain_refusal(domain)
        if reason is not None:
            return f"out of scope: {reason}"
        return None if self.check is None else await self.check(url)
