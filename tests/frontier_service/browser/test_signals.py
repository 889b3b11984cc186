"""The decision rules of `--browser auto`, measured: precision and recall of
`browser_signals` on the test kit's JavaScript site and on a mixed web (10% script-built
pages), every page rendered in-process by the test web's `routes.resolve` (no server)."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from archive_testkit.testweb import TestWebConfig, hosts_where
from archive_testkit.testweb import js_pages as js
from archive_testkit.testweb.graph import page_path
from archive_testkit.testweb.routes import resolve
from archive_testkit.testweb.script_built import is_script_built
from frontier_service.browser.signals import (
    CLIENT_ROUTING,
    EMPTY_BODY_WITH_BUNDLE,
    LAZY_DATA_SRC,
    NOSCRIPT_FALLBACK,
    SCRIPT_FETCH,
    SCRIPT_INSERTED_CONTENT,
    SCRIPT_INSERTED_STYLESHEET,
    BrowserVerdict,
    browser_signals,
)

JS_WEB = TestWebConfig(seed=32, hosts=2, pages_per_host=5, special_fraction=0.0,
                       trap_fraction=0.0, dead_fraction=0.0)
MIXED_WEB = TestWebConfig(seed=7, hosts=40, pages_per_host=200, special_fraction=0.1,
                          trap_fraction=0.0, dead_fraction=0.0, script_built_fraction=0.1)

# Which rule fires on each page of the JavaScript site (a changed rule shows here first).
JS_SITE_SIGNALS: dict[str, tuple[str, ...]] = {
    js.FETCHED: (SCRIPT_FETCH, SCRIPT_INSERTED_CONTENT),
    js.LAZY: (LAZY_DATA_SRC,),
    **dict.fromkeys((js.SPA, *js.SPA_ROUTES), (CLIENT_ROUTING, EMPTY_BODY_WITH_BUNDLE)),
    js.NOSCRIPT: (SCRIPT_INSERTED_CONTENT, NOSCRIPT_FALLBACK),
    js.FONTS: (SCRIPT_INSERTED_STYLESHEET,),
    **dict.fromkeys(js.FINE_OVER_HTTP, ()),
}


def _measure(verdicts: dict[str, BrowserVerdict],
             needed: Iterable[str]) -> tuple[float, float]:
    """(precision, recall) of the verdicts against the pages that need the browser."""
    truth = set(needed)
    flagged = {page for page, verdict in verdicts.items() if verdict.needed}
    hits = len(flagged & truth)
    precision = hits / len(flagged) if flagged else 1.0
    recall = hits / len(truth) if truth else 1.0
    return precision, recall


def _report(name: str, verdicts: dict[str, BrowserVerdict], needed: Iterable[str]) -> None:
    truth = set(needed)
    for page, verdict in sorted(verdicts.items()):
        if verdict.needed or page in truth:
            print(f"{name} {page}: needs={page in truth} signals={','.join(verdict.signals)}")


@pytest.mark.unit
def test_js_site_every_page_that_needs_a_browser_and_no_other() -> None:
    host = hosts_where(JS_WEB, lambda traits: traits.alive)[0]
    verdicts = {}
    for page in sorted(js.JS_PAGES):
        reply = resolve(JS_WEB, host, page)
        assert reply.status == 200, page
        verdicts[page] = browser_signals(reply.body, url=f"http://{host}{page}")
    _report("js-site", verdicts, js.NEEDS_BROWSER)
    precision, recall = _measure(verdicts, js.NEEDS_BROWSER)
    print(f"js-site: {len(verdicts)} pages, {len(js.NEEDS_BROWSER)} need a browser, "
          f"precision {precision:.3f} recall {recall:.3f}")
    assert recall == 1.0
    assert precision >= 0.8
    assert {page: verdict.signals for page, verdict in verdicts.items()} == JS_SITE_SIGNALS


@pytest.mark.unit
def test_mixed_web_script_built_pages_found() -> None:
    hosts = hosts_where(MIXED_WEB, lambda traits: traits.alive)[:15]
    verdicts: dict[str, BrowserVerdict] = {}
    needed: set[str] = set()
    for host in hosts:
        for index in range(20):
            path = page_path(index)
            reply = resolve(MIXED_WEB, host, path)
            assert reply.status == 200, (host, path)
            url = f"http://{host}{path}"
            verdicts[url] = browser_signals(reply.body, url=url)
            if is_script_built(MIXED_WEB, host, path):
                needed.add(url)
    special = hosts_where(MIXED_WEB, lambda traits: traits.alive and traits.special)[0]
    for path in ("/enc/latin1.html", "/malformed/page.html"):  # odd HTML, fine over HTTP
        reply = resolve(MIXED_WEB, special, path)
        verdicts[f"http://{special}{path}"] = browser_signals(reply.body, url=path)
    _report("mixed", verdicts, needed)
    precision, recall = _measure(verdicts, needed)
    print(f"mixed web: {len(verdicts)} pages, {len(needed)} script-built, "
          f"precision {precision:.3f} recall {recall:.3f}")
    assert len(verdicts) >= 300 and len(needed) >= 15  # the measure means something
    assert recall == 1.0
    assert precision >= 0.8


PLAIN_ARTICLE = """<!DOCTYPE html><html><head><title>An article</title>
<link rel="stylesheet" href="/site.css"><script src="/analytics.js" async></script>
<script>window.dataLayer = window.dataLayer || []; dataLayer.push({event: "view"});</script>
<script type="application/ld+json">{"@type": "Article", "text": "fetch(x).innerHTML ="}</script>
</head><body><header><a href="/">Home</a></header><main><h1>On harbours</h1>
<p>The harbour was built in the year the river moved, and the town moved with it; the old
quay is a garden now, and the new one is a mile downstream where the water is deep.</p>
<img src="/img/quay.jpg" alt="the old quay"><img src="/img/b.jpg" data-src="/img/b-big.jpg">
<noscript>Enable JavaScript for comments.</noscript></main></body></html>"""

REACT_SHELL = '<!DOCTYPE html><html><body><div id="root"></div><script src="/bundle.js"></script>'


@pytest.mark.unit
@pytest.mark.parametrize(("html", "url", "signals"), [
    (PLAIN_ARTICLE, "http://a.test/article", ()),
    (PLAIN_ARTICLE.encode(), "http://a.test/article#!/comments", (CLIENT_ROUTING,)),
    (REACT_SHELL, "http://a.test/", (CLIENT_ROUTING, EMPTY_BODY_WITH_BUNDLE)),
    ("<p>no markup any rule reads</p>", "http://a.test/", ()),
    ('<body><img class="lazy" src="data:image/gif;base64,R0lGOD" data-srcset="/a.jpg 1x">',
     "http://a.test/", (LAZY_DATA_SRC,)),
    ("<script>const x = new XMLHttpRequest(); x.onload = () => "
     "document.querySelector('main').insertAdjacentHTML('beforeend', x.responseText);</script>"
     "<main><p>Loading</p></main>", "http://a.test/", (SCRIPT_FETCH,)),
    ("<script>(function(){var s=document.createElement('script');s.src='/ga.js';"
     "document.head.appendChild(s);})();</script><main><a href='/x'>x</a></main>",
     "http://a.test/", ()),  # an analytics loader inserts only a script
    ("<script>window.addEventListener('hashchange', route);</script><main><a href='#/a'>a</a>"
     "</main>", "http://a.test/", (CLIENT_ROUTING,)),
    ("<body><noscript><a href='/static-version'>static</a></noscript><p>text</p>", "http://a.test/",
     (NOSCRIPT_FALLBACK,)),
])
def test_hand_written_pages(html: str | bytes, url: str, signals: tuple[str, ...]) -> None:
    verdict = browser_signals(html, url=url)
    assert (verdict.needed, verdict.signals) == (bool(signals), signals)


@pytest.mark.parametrize(("html", "scripted"), [
    ("<html><body><p>Plain text</p><a href='/a'>a</a></body></html>", False),
    ('<html><head><script type="application/ld+json">{"@type": "Article"}</script></head>'
     "<body><p>Data, not code</p></body></html>", False),
    ("<html><body><script>   </script><p>An empty script runs nothing</p></body></html>", False),
    ("<html><body><p>x</p><script>window.dataLayer = [];</script></body></html>", True),
    ('<html><body><a href="/more">more</a><script src="/app.js"></script></body></html>', True),
])
def test_whether_a_page_runs_any_script(html: str, scripted: bool) -> None:
    verdict = browser_signals(html, url="https://example.org/")
    assert verdict.scripted is scripted and not verdict.needed
