"""(c) Scrapy configured like frontier_service: 512 concurrent, 1 per host, 1 s delay, robots.txt.

Host mapping: a download handler whose Twisted agent connects every `*.test` host to the
test web's 127.0.0.1:port (connection pool still keyed per virtual host, Host header as
in the URL), the equivalent of the crawler's resolver. Pages are the same work as the
others': the response is parsed for links (Scrapy's LinkExtractor) and the body is
hashed into a blob store.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path
from typing import Any

import scrapy
from scrapy import signals
from scrapy.core.downloader.handlers.http11 import (
    HTTP11DownloadHandler,
    _BindAddressAgent,
    _ScrapyAgent,
)
from scrapy.crawler import Crawler, CrawlerProcess
from scrapy.http import Response
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.endpoints import TCP4ClientEndpoint

from archive_pipelines.blobstore import LocalBlobStore
from bench.crawl_baselines.common import MAX_BODY_BYTES, USER_AGENT, Window, add_common_args, seeds


class _HostMapAgent(_BindAddressAgent):
    port = 0

    def _getEndpoint(self, uri: Any) -> Any:
        if uri.host.decode().lower().endswith(".test"):
            from twisted.internet import reactor

            return TCP4ClientEndpoint(reactor, "127.0.0.1", self.port, timeout=30)
        return super()._getEndpoint(uri)


class _HostMapScrapyAgent(_ScrapyAgent):
    def _get_agent(self, request: scrapy.Request, timeout: float) -> Any:
        from twisted.internet import reactor

        return _HostMapAgent(reactor=reactor, contextFactory=self._contextFactory,
                             connectTimeout=timeout, bindAddress=None, pool=self._pool)


class HostMapDownloadHandler(HTTP11DownloadHandler):
    """HTTP11DownloadHandler whose agent sends `*.test` to the test web's port."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        _HostMapAgent.port = crawler.settings.getint("BENCH_TESTWEB_PORT")

    async def download_request(self, request: scrapy.Request) -> Response:
        agent = _HostMapScrapyAgent(
            contextFactory=self._contextFactory, bindAddress=self._bind_address, pool=self._pool,
            maxsize=self._default_maxsize, warnsize=self._default_warnsize,
            fail_on_dataloss=self._fail_on_dataloss, crawler=self._crawler,
            tls_verbose_logging=self._tls_verbose_logging)
        return await maybe_deferred_to_future(agent.download_request(request))


class BenchSpider(scrapy.Spider):
    name = "crawl-bench"
    allowed_domains = ["test"]
    handle_httpstatus_all = True  # 404/500 are pages too, as for the other crawlers

    def __init__(self, start: list[str], window: Window, store: LocalBlobStore, **kw: Any) -> None:
        super().__init__(**kw)
        self.seed_urls = start
        self.window = window
        self.store = store
        self.links = LinkExtractor(allow_domains=["test"])

    async def start(self) -> Any:
        for url in self.seed_urls:
            yield scrapy.Request(url, callback=self.parse, errback=self.failed)

    def parse(self, response: Response) -> Any:
        body = response.body
        if not self.store.exists(hashlib.sha256(body).hexdigest()):
            self.store.put_bytes(body)
        self.window.page(True)
        if response.status == 200 and isinstance(response, scrapy.http.TextResponse):
            for link in self.links.extract_links(response):
                yield scrapy.Request(link.url, callback=self.parse, errback=self.failed)

    def failed(self, failure: Any) -> None:
        self.window.page(False)


def settings_for(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": args.delay,
        "RANDOMIZE_DOWNLOAD_DELAY": False,  # a fixed delay, as the other crawlers use
        "ROBOTSTXT_OBEY": True,
        "USER_AGENT": USER_AGENT,
        "DOWNLOAD_MAXSIZE": MAX_BODY_BYTES,
        "DOWNLOAD_WARNSIZE": 0,
        "DOWNLOAD_TIMEOUT": 30,
        "DOWNLOAD_HANDLERS": {"http": "bench.crawl_baselines.scrapy_crawl.HostMapDownloadHandler"},
        "BENCH_TESTWEB_PORT": args.port,
        # Scrapy's own broad-crawl advice: no cookies, no retries, INFO logs, FIFO (BFS) queues.
        "COOKIES_ENABLED": False,
        "RETRY_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "LOGSTATS_INTERVAL": 10,
        "TELNETCONSOLE_ENABLED": False,
        "REACTOR_THREADPOOL_MAXSIZE": 20,
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "CLOSESPIDER_TIMEOUT": args.warmup + args.seconds + 5,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add_common_args(parser)
    args = parser.parse_args()
    window = Window(args.warmup, args.seconds)
    store = LocalBlobStore(Path(args.work_dir) / "cas")
    process = CrawlerProcess(settings_for(args))
    crawler = process.create_crawler(BenchSpider)

    def engine_started() -> None:
        from twisted.internet import reactor

        reactor.callLater(args.warmup, window.mark, "open")
        reactor.callLater(args.warmup + args.seconds, close)

    def close() -> None:
        window.mark("close")
        assert crawler.engine is not None
        deferred_from_coro(crawler.engine.close_spider_async(reason="bench window over"))

    crawler.signals.connect(engine_started, signal=signals.engine_started)
    with store.deferred_sync():
        process.crawl(crawler, start=seeds(args), window=window, store=store)
        process.start()
    import scrapy as installed

    window.result(f"Scrapy {installed.__version__}").emit()


if __name__ == "__main__":
    main()
