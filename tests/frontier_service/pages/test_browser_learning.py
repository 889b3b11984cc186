"""`--browser auto` learns per host: a sample render that finds links its HTTP page did not
have (here, links a script bundle adds: no signal can read them from the HTML) marks the host
as needing the browser, and its later HTML pages that run a script are rendered ("learnt");
a host whose sample finds nothing new keeps being crawled over HTTP, and a page that runs no
script is never rendered without a signal (neither as a sample nor as learnt)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from urllib.parse import urlsplit

from frontier_service.archiving import iter_records
from frontier_service.service.service import CrawlerService
from tests.frontier_service.browser.pages import html, page_server
from tests.frontier_service.service.web import crawler_settings
from tests.helpers.crawls import delete_keys

SCRIPTED_HOST = "bundled.example"  # its bundles add links: only a render finds them
PLAIN_HOST = "plain.example"  # nothing but HTML
TEXT = "<p>" + "Words of an ordinary page that has enough text to not look empty. " * 6 + "</p>"


def bundled(link: str, script: str) -> tuple[int, dict[str, str], bytes]:
    return html(f'<html><body>{TEXT}<a href="{link}">next</a><script src="{script}"></script>'
                "</body></html>")


def adds_link(target: str) -> tuple[int, dict[str, str], bytes]:
    script = (f'const a = document.createElement("a"); a.href = "{target}"; '
              'a.textContent = "more"; document.body.appendChild(a);')
    return 200, {"Content-Type": "text/javascript"}, script.encode()


PAGES = {
    "/s/": bundled("/s/b.html", "/s/one.js"),
    "/s/one.js": adds_link("/s/hidden-1.html"),
    "/s/b.html": bundled("/s/", "/s/two.js"),
    "/s/two.js": adds_link("/s/hidden-2.html"),
    "/s/hidden-1.html": html(f"<html><body>{TEXT}</body></html>"),
    "/s/hidden-2.html": html(f"<html><body>{TEXT}</body></html>"),
    "/p/": html(f'<html><body>{TEXT}<a href="/p/two.html">two</a>'
                '<script>window.dataLayer = [];</script></body></html>'),  # adds nothing
    "/p/two.html": html(f'<html><body>{TEXT}<a href="/p/">home</a></body></html>'),
}


def test_a_sample_that_finds_more_marks_its_host_and_a_plain_one_does_not(
        redis_url: str, tmp_path: Path) -> None:
    name = f"learn-{uuid.uuid4().hex[:10]}"

    async def crawl() -> CrawlerService:
        async with page_server(PAGES) as server:
            settings = crawler_settings(
                tmp_path / "data", redis_url, name, server.port,
                allowed_domains=(SCRIPTED_HOST, PLAIN_HOST), max_depth=3, min_delay_s=0.0,
                host_map=((SCRIPTED_HOST, f"127.0.0.1:{server.port}"),
                          (PLAIN_HOST, f"127.0.0.1:{server.port}")),
                browser="auto", browser_samples=1, exit_when_idle_s=1.0)
            service = CrawlerService(settings, seeds=(f"http://{SCRIPTED_HOST}/s/",
                                                      f"http://{PLAIN_HOST}/p/"))
            await service.run()
            return service

    try:
        service = asyncio.run(crawl())
    finally:
        delete_keys(redis_url, name)
    records = {urlsplit(r["page_url"]).path: r for r in iter_records(tmp_path / "data" / "sessions")
               if r["requests"] and r["requests"][0]["resource_type"] == "document"}
    why = {path: record["browser"]["signals"] for path, record in records.items()
           if "browser" in record}
    assert why == {"/s/": ["sample"], "/s/b.html": ["learnt"], "/p/": ["sample"]}, why
    # Found by the renders, crawled over HTTP: they run no script, so a browser sees the same.
    assert {"/s/hidden-1.html", "/s/hidden-2.html"} <= set(records)
    assert "/p/two.html" in records  # crawled over HTTP: its host's sample found nothing new
    assert service.metrics.browser_hosts_learnt == 1
