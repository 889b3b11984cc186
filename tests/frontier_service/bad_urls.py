"""Bad URLs, as links and as seeds: the ones refused with a reason and the odd-but-valid ones
that survive (canonicalized), shared by the link buffer's and the seeds' tests."""

from __future__ import annotations

from pathlib import Path

from frontier_service.service.crawler_settings import CrawlerSettings

ACCEPTED = {
    "http://site0001.test/search?q=red|green|blue": "http://site0001.test/search?q=red%7Cgreen%7Cblue",
    "http://site0001.test/a\nb": "http://site0001.test/ab",
    "  http://site0001.test/padded  ": "http://site0001.test/padded",
    "http://bücher.test/katalog/1.html": "http://xn--bcher-kva.test/katalog/1.html",
    "HTTP://SITE0001.TEST:80/x?b=2&a=1#frag": "http://site0001.test/x?a=1&b=2",
}
REFUSED = [
    "http://site0001.test/?q=" + "x" * 10_000,
    "ftp://site0001.test/pub/file.tar.gz",
    "mailto:someone@site0001.test",
    "javascript:void(0)",
    "data:text/html;base64,PGgxPg==",
    "../../relative/junk.html",
    "//",
    "http://",
    "http:///nohost",
    "http://[::1",
    "http://exa mple.test/",
    "",
]


def bad_url_settings(tmp_path: Path, redis_url: str, crawl_name: str) -> CrawlerSettings:
    return CrawlerSettings(data_dir=tmp_path / "data", redis_url=redis_url, crawl_name=crawl_name,
                           allowed_domains=("*.test",), seen_capacity=10_000,
                           visited_expected=1_000)
