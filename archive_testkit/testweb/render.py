"""HTML of an ordinary test page: shared assets, links from the graph, filler prose."""

from __future__ import annotations

import bisect
import functools
import html
import itertools
import re

from archive_testkit.testweb.config import TestWebConfig
from archive_testkit.testweb.graph import links_from, page_rng
from archive_testkit.testweb.hosts import host_traits
from archive_testkit.testweb.seeding import stable_rng
from archive_testkit.testweb.text import anchor_pool, paragraph_pool, title_words

_NAV_LINKS = 10
_LINKS_PER_PARAGRAPH = 2
_NEEDS_ESCAPE = re.compile(r"[&<>\"'\r\n]")


def attr(value: str) -> str:
    """Escape a string for a double-quoted HTML attribute, newlines as character references."""
    if not _NEEDS_ESCAPE.search(value):
        return value
    return html.escape(value, quote=True).replace("\n", "&#10;").replace("\r", "&#13;")


def render_page(config: TestWebConfig, host: str, path: str) -> bytes:
    """The full HTML of an ordinary page (also used for /private/ and /slow/ pages).

    Size lands in [page_min_bytes, page_max_bytes] unless the links alone are bigger.
    """
    traits = host_traits(config, host)
    if traits is None:
        raise ValueError(f"not a host of this test web: {host!r}")
    name = traits.host
    rng = page_rng(config, name, path)
    hrefs = links_from(config, traits, path, rng=rng)  # first, so page_links() sees the same draws
    draw = rng.random
    anchors = anchor_pool(config.seed)
    title = attr(title_words(rng))
    links = [f'<a href="{attr(href)}">{anchors[int(draw() * len(anchors))]}</a>' for href in hrefs]
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="stylesheet" href="/static/site.css">\n'
        '<link rel="preload" href="/static/font.woff2" as="font" type="font/woff2" crossorigin>\n'
        '<script src="/static/app.js" defer></script>\n</head>\n<body>\n'
        '<header><img src="/img/logo.png" alt="logo" width="120" height="40">'
        f"<h1>{title}</h1></header>\n<nav><ul>\n"
        + "".join(f"<li>{link}</li>\n" for link in links[:_NAV_LINKS])
        + "</ul></nav>\n<main><article>\n"
    ).encode()
    foot = (
        f"</article></main>\n<footer><p>&copy; {name} &mdash; {attr(path)}</p></footer>\n"
        "</body>\n</html>\n"
    ).encode()
    # The prose is a run of consecutive blocks from the seed's pool (the pool is random
    # already); the remaining links go at the ends of its first paragraphs.
    opened, closed, ends = _blocks(config.seed, config.page_max_bytes)
    start = int(draw() * len(paragraph_pool(config.seed)))
    parts = [head]
    inline = links[_NAV_LINKS:]
    size = len(head) + len(foot)
    for n, first in enumerate(range(0, len(inline), _LINKS_PER_PARAGRAPH)):
        extra = " ".join(inline[first : first + _LINKS_PER_PARAGRAPH]).encode()
        parts += (opened[start + n], b" ", extra, b"</p>\n")
        size += len(opened[start + n]) + len(extra) + 6
    # Stop short of the maximum: the last block and multi-byte characters overshoot.
    low = config.page_min_bytes
    target = rng.randint(low, max(low, config.page_max_bytes - 5000))
    first_plain = start + (len(inline) + _LINKS_PER_PARAGRAPH - 1) // _LINKS_PER_PARAGRAPH
    if size < target:
        stop = bisect.bisect_left(ends, ends[first_plain] + target - size) + 1
        parts += closed[first_plain : min(stop, len(closed))]
    parts.append(foot)
    return b"".join(parts)


@functools.lru_cache(maxsize=16)
def _blocks(seed: int, max_bytes: int) -> tuple[tuple[bytes, ...], tuple[bytes, ...], list[int]]:
    """The pool as HTML blocks, some with a heading, repeated so any run fits a page.

    Returns (blocks without "</p>", complete blocks, ends) where ends[i] is the length of
    the complete blocks before i.
    """
    rng = stable_rng(seed, "blocks")
    pool = paragraph_pool(seed)
    once = [
        ((f"<h2>{title_words(rng, 2, 5)}</h2>\n" if rng.random() < 0.15 else "") + "<p>" + text)
        .encode()
        for text in pool
    ]
    copies = 2 + max_bytes // sum(map(len, once))
    opened = tuple(once * copies)
    closed = tuple(block + b"</p>\n" for block in opened)
    ends = [0, *itertools.accumulate(map(len, closed))]
    return opened, closed, ends
