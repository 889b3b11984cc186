"""Scrapy crawling one website from its home page until nothing is left (the single-host case).

    python -m bench.crawl_baselines.scrapy_site --start http://127.0.0.1:8000/ \\
        --concurrency 16 --per-host-concurrency 8 --delay 0 --max-depth 5

Scrapy's defaults otherwise (its user agent, AutoThrottle off, duplicate filter on), and
robots.txt obeyed as our crawler does. Each page's links are extracted with Scrapy's
LinkExtractor and every one in the site's scope is requested; the body is hashed and
nothing is stored, so Scrapy does less per page than our crawler (which archives every
page). Scrapy's duplicate filter drops the repeats of every link on every page (~130,000
on the docs site); `--skip-seen` has the spider yield each URL once instead, a cheaper
spider than Scrapy's idiom. `--testweb-port` sends `*.test` hosts to the test web on that
port (for the test web's docs host). Prints one `RESULT {json}` line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor


class SiteSpider(scrapy.Spider):
    """Follows every link within the start URL's host; counts and hashes each page."""

    name = "single-host"

    def __init__(self, start: str, skip_seen: bool = False, **kw: Any) -> None:
        super().__init__(**kw)
        self.start_url = start
        self.skip_seen = skip_seen
        self.yielded: set[str] = set()  # with skip_seen: URLs already requested, no fragment
        self.allowed_domains = [urlsplit(start).hostname or ""]
        self.links = LinkExtractor()  # the scope is allowed_domains (the offsite middleware)
        self.pages = 0
        self.failures = 0
        self.digests: set[str] = set()

    async def start(self) -> Any:
        yield scrapy.Request(self.start_url, callback=self.parse, errback=self.failed)

    def parse(self, response: Response) -> Any:
        self.pages += 1
        self.digests.add(hashlib.sha256(response.body).hexdigest())
        if isinstance(response, TextResponse):
            for link in self.links.extract_links(response):
                if self.skip_seen:
                    url = link.url.partition("#")[0]
                    if url in self.yielded:
                        continue
                    self.yielded.add(url)
                yield scrapy.Request(link.url, callback=self.parse, errback=self.failed)

    def failed(self, failure: Any) -> None:
        self.failures += 1


def settings_for(args: argparse.Namespace) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.per_host_concurrency,
        "DOWNLOAD_DELAY": args.delay,
        "DEPTH_LIMIT": args.max_depth,
        "ROBOTSTXT_OBEY": True,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
    }
    if args.testweb_port:
        settings["DOWNLOAD_HANDLERS"] = {
            "http": "bench.crawl_baselines.scrapy_crawl.HostMapDownloadHandler"}
        settings["BENCH_TESTWEB_PORT"] = args.testweb_port
    return settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--start", required=True, help="the site's home page")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--per-host-concurrency", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--max-depth", type=int, default=5)
    parser.add_argument("--skip-seen", action="store_true",
                        help="yield each URL once (the spider remembers them) instead of leaving "
                             "the repeats to Scrapy's duplicate filter")
    parser.add_argument("--testweb-port", type=int, default=0,
                        help="send *.test hosts to the test web on this 127.0.0.1 port")
    args = parser.parse_args()
    process = CrawlerProcess(settings_for(args))
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, start=args.start, skip_seen=args.skip_seen)
    process.start()
    spider = crawler.spider
    assert isinstance(spider, SiteSpider)
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    wanted = ("downloader/request_count", "dupefilter/filtered", "robotstxt/request_count",
              "finish_reason", "elapsed_time_seconds")
    print("RESULT " + json.dumps({
        "crawler": f"Scrapy {scrapy.__version__}", "pages": spider.pages,
        "failures": spider.failures, "distinct_bodies": len(spider.digests),
        **{key: stats.get(key) for key in wanted}}, default=str), flush=True)


if __name__ == "__main__":
    main()
