"""Replay rewriting throughput: MB/s of the HTML and CSS rewriters on generated ~1 MB inputs.

    PYTHONPATH=. .venv/bin/python bench/rewrite_bench.py [--repeat 5] [--chunk 65536]

Three inputs, fed in `--chunk`-byte pieces as the replay server streams a body:
- link-dense HTML: a listing page, ~10,000 URLs per MB (links, images with srcset);
- article HTML: paragraphs of text, a few links, inline scripts and styles;
- CSS: rules with url() and @import, comments and strings.
Prints the best of `--repeat` runs for each, by CPU time (the process's own: other work on
a shared machine does not count against it; one CPU, no I/O).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from archive_pipelines.replay.archive_urls import ArchiveUrls
from archive_pipelines.replay.banner import render_banner
from archive_pipelines.replay.rewrite_css import CssRewriter
from archive_pipelines.replay.rewrite_html import HtmlRewriter

SIZE = 1_000_000
URLS = ArchiveUrls(timestamp="20200102030405", page_url="http://example.com/news/index.html")


def link_dense_page() -> bytes:
    parts = [b'<!DOCTYPE html><html><head><title>Listing</title><link rel=stylesheet href="/s.css">'
             b'<script src="/app.js"></script></head><body>']
    item = 0
    while sum(map(len, parts)) < SIZE:
        item += 1
        parts.append(
            b'<div class="item item-%d" id="i%d"><h2><a href="/articles/%d/a-title.html?ref=home'
            b'&amp;x=1">Title %d</a></h2><p class="summary">Lorem ipsum dolor sit amet, '
            b'consectetur adipiscing elit. <span>Ut enim</span> ad minim veniam.</p>'
            b'<img src="/img/%d.jpg" srcset="/img/%d@2x.jpg 2x" alt="picture" width=300 height=200>'
            b'<ul><li><a href="tag/%d">tag</a></li><li><a href="https://other.example/x">ext</a>'
            b"</li></ul></div>\n" % (item, item, item, item, item, item, item))
    parts.append(b"</body></html>")
    return b"".join(parts)


def article_page() -> bytes:
    paragraph = (b"<p>" + b"Sed ut perspiciatis unde omnis iste natus error sit voluptatem "
                 b"accusantium doloremque laudantium, totam rem aperiam. " * 6
                 + b'<a href="/related/%d">related</a></p>\n')
    script = (b"<script>(function(){var d=document,s=d.createElement('script');"
              b"for(var i=0;i<10;i++){if(i<5){s.src='/x'+i+'.js'}}})();</script>\n" * 3)
    parts = [b"<!DOCTYPE html><html><head><style>body{background:url(/bg.png)}"
             b"h1{font:2em serif}</style></head><body><article>"]
    item = 0
    while sum(map(len, parts)) < SIZE:
        item += 1
        parts.append(paragraph % item)
        if item % 10 == 0:
            parts.append(script)
    parts.append(b"</article></body></html>")
    return b"".join(parts)


def stylesheet() -> bytes:
    rule = (b".c%d{background:url(../img/c%d.png) no-repeat;color:#333;margin:0 auto}"
            b'/* a comment with url(x) */.d%d::after{content:"text %d"}\n')
    parts = [b'@import "base.css";\n']
    item = 0
    while sum(map(len, parts)) < SIZE:
        item += 1
        parts.append(rule % (item, item, item, item))
    return b"".join(parts)


def best_mb_per_s(data: bytes, make: Callable[[], HtmlRewriter | CssRewriter], *,
                  repeat: int, chunk: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        rewriter = make()
        for start in range(0, len(data), chunk):
            rewriter.feed(data[start:start + chunk])
        rewriter.close()
        best = min(best, time.process_time() - started)
    return len(data) / 1e6 / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=65536)
    args = parser.parse_args()
    banner = render_banner(timestamp="20200102030405", original_url=URLS.page_url,
                           calendar_href=f"/web/*/{URLS.page_url}")
    cases: list[tuple[str, bytes, Callable[[], HtmlRewriter | CssRewriter]]] = [
        ("HTML, link-dense", link_dense_page(), lambda: HtmlRewriter(URLS, banner=banner)),
        ("HTML, article", article_page(), lambda: HtmlRewriter(URLS, banner=banner)),
        ("CSS", stylesheet(), lambda: CssRewriter(URLS)),
    ]
    for name, data, make in cases:
        rate = best_mb_per_s(data, make, repeat=args.repeat, chunk=args.chunk)
        print(f"{name:18} {len(data) / 1e6:5.2f} MB  {rate:7.1f} MB/s")


if __name__ == "__main__":
    main()
