"""A single-host documentation site: hundreds of pages with hundreds of links each, like a
Sphinx build.

Every page has a top bar (home and each section's index), a sidebar table of contents
(the current section in full, the first pages of every other section), prose with
in-text links (some `#section-N` links within the page), and previous/next links. Hrefs mix root-relative,
relative and absolute forms, `#fragment`s and repeats, as real documentation does. The
home page links every section index and every section index links all of its section,
so the whole site is within depth 2 of `/`.

Pure and deterministic: `docs_links(config, origin, path)` is exactly the list of
`<a href>` values `render_docs_page` writes, in document order. `origin` is the site's
`http://host[:port]`, which absolute links carry.
"""

from __future__ import annotations

import functools
import html
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass

from archive_testkit.testweb.config import TestWebConfig
from archive_testkit.testweb.graph import relative_href
from archive_testkit.testweb.seeding import below, stable_rng
from archive_testkit.testweb.text import paragraph_pool, title_words

SECTIONS = ("tutorial", "guide", "howto", "api", "reference", "cli", "deploy", "faq",
            "internals", "examples", "changelog", "glossary")
_SLUGS = ("install", "queue", "worker", "config", "storage", "release", "schedule", "retry",
          "signal", "replica", "segment", "policy", "quota", "ledger", "module", "events")
HEADINGS = 6  # <h2 id="section-0"> .. "section-5" on every page: targets of #fragment links
SIDEBAR_SHARE = 0.7  # of a page's links: top bar, sidebar and the previous/next links
MIN_BYTES, MAX_BYTES = 30_000, 56_000
_LINKS_PER_PARAGRAPH = 3
_CSS = ("body{margin:0;font:16px/1.5 sans-serif}.sidebar{float:left;width:18em}"
        "main{margin-left:19em;max-width:50em}.headerlink{visibility:hidden}"
        "h2:hover .headerlink{visibility:visible}pre{background:#f6f6f6;padding:.5em}")


@dataclass(frozen=True)
class Link:
    href: str
    text: str


@dataclass(frozen=True)
class PagePlan:
    """What one page holds; `links` lists every <a href> in document order."""

    title: str
    top: tuple[Link, ...]
    sidebar: tuple[Link, ...]
    inline: tuple[tuple[Link, ...], ...]  # in-text links, a few at the end of each paragraph
    footer: tuple[Link, ...]
    prose_start: int  # the page's paragraphs are consecutive ones of the seed's pool
    target_bytes: int  # prose without links is added until the page is this long

    @property
    def links(self) -> list[Link]:
        inline = [link for links in self.inline for link in links]
        return [*self.top, *self.sidebar, *inline, *self.footer]


def docs_paths(config: TestWebConfig) -> tuple[str, ...]:
    """Every page of the site, home first, then section by section (each index first)."""
    return _layout(config.docs_pages)[0]


def is_docs_path(config: TestWebConfig, path: str) -> bool:
    return path in _layout(config.docs_pages)[2]


def docs_links(config: TestWebConfig, origin: str, path: str) -> list[str]:
    """The href of every <a> in the page, in document order, exactly as a parser reads them."""
    return [link.href for link in plan_page(config, origin, path).links]


def docs_robots_txt() -> bytes:
    return b"User-agent: *\nDisallow: /_sources/\n"


@functools.lru_cache(maxsize=1024)
def render_docs_page(config: TestWebConfig, origin: str, path: str) -> bytes:
    """The full HTML of one page of the site."""
    plan = plan_page(config, origin, path)
    title = html.escape(plan.title)
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title} &mdash; Testkit documentation</title>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<style>{_CSS}</style>\n</head>\n<body>\n<header class=\"top\">\n"
        + " |\n".join(_anchor(link) for link in plan.top)
        + '\n</header>\n<div class="sidebar"><ul class="toc">\n'
        + "".join(f'<li class="toctree-l1">{_anchor(link)}</li>\n' for link in plan.sidebar)
        + f'</ul></div>\n<main>\n<h1>{title}</h1>\n'
    ]
    footer = ('</main>\n<footer class="related">\n'
              + " ".join(_anchor(link) for link in plan.footer)
              + "\n<p>&copy; Testkit authors. Built with a documentation generator.</p>"
              "\n</footer>\n</body>\n</html>\n")
    pool = paragraph_pool(config.seed)
    size = len(parts[0]) + len(footer)
    n = 0
    while n < len(plan.inline) or size < plan.target_bytes:
        prose = pool[(plan.prose_start + n) % len(pool)]  # plain text: nothing to escape
        links = plan.inline[n] if n < len(plan.inline) else ()
        block = f"<p>{prose} {' '.join(_anchor(link) for link in links)}</p>\n"
        if n % 4 == 1 and n // 4 < HEADINGS:
            block = f'<h2 id="section-{n // 4}">{prose[:40].title()}</h2>\n' + block
        if n % 7 == 3:
            block += f"<pre><code>$ testkit {prose[:60].lower()}\n</code></pre>\n"
        parts.append(block)
        size += len(block.encode())
        n += 1
    parts.append(footer)
    return "".join(parts).encode()


def plan_page(config: TestWebConfig, origin: str, path: str) -> PagePlan:
    """The structure of page `path`; ValueError if the site has no such page."""
    paths, sections, index_of = _layout(config.docs_pages)
    if path not in index_of:
        raise ValueError(f"not a page of the documentation site: {path!r}")
    number = index_of[path]
    titles = _titles(config.seed, config.docs_pages)
    rng = stable_rng(config.seed, "docs", path)

    def link(target: int, form: str) -> Link:
        return Link(_href(form, origin, path, target=paths[target]), titles[target])

    top = [link(0, "root"), *(link(start, "root") for start, _ in sections)]
    footer = [link(number + step, "relative") for step in (-1, 1)
              if 0 <= number + step < len(paths)]
    own = next((r for r in sections if r[0] <= number < r[1]), (0, 0))
    sidebar = [link(n, "relative") for n in range(*own)]
    # The rest of the table of contents: the first pages of the other sections, in turns.
    budget = int(config.docs_links * SIDEBAR_SHARE) - len(top) - len(footer) - len(sidebar)
    others = [r for r in sections if r != own]
    for depth in range(1, max((stop - start for start, stop in others), default=0)):
        for start, stop in others:
            if budget > 0 and start + depth < stop:
                sidebar.append(link(start + depth, "relative"))
                budget -= 1
    inline = [_inline_link(rng, link, len(paths)) for _ in
              range(config.docs_links - len(top) - len(footer) - len(sidebar))]
    chunks = tuple(tuple(inline[n : n + _LINKS_PER_PARAGRAPH])
                   for n in range(0, len(inline), _LINKS_PER_PARAGRAPH))
    return PagePlan(titles[number], tuple(top), tuple(sidebar), chunks, tuple(footer),
                    prose_start=below(rng, len(paragraph_pool(config.seed))),
                    target_bytes=MIN_BYTES + below(rng, MAX_BYTES - MIN_BYTES))


def _inline_link(rng: random.Random, link: Callable[[int, str], Link], pages: int) -> Link:
    """An in-text link: another page (any href form, maybe with a #fragment) or a ¶ link."""
    roll = rng.random()
    if roll < 0.06:
        return Link(f"#section-{below(rng, HEADINGS)}", "¶")
    made = link(below(rng, pages), "root" if roll < 0.45 else "relative" if roll < 0.75
                else "absolute")
    if rng.random() < 0.12:
        return Link(f"{made.href}#section-{below(rng, HEADINGS)}", made.text)
    return made


def _href(form: str, origin: str, here: str, *, target: str) -> str:
    if form == "root":
        return target
    if form == "absolute":
        return origin + target
    return relative_href(here, target)


def _anchor(link: Link) -> str:
    return f'<a href="{html.escape(link.href)}">{html.escape(link.text, quote=False)}</a>'


@functools.lru_cache(maxsize=8)
def _layout(pages: int) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...], dict[str, int]]:
    """(paths, [start, stop) page numbers of each section, page number of each path)."""
    count = min(len(SECTIONS), max(1, (pages - 1) // 8)) if pages > 1 else 0
    bounds = [1 + (pages - 1) * k // count for k in range(count + 1)] if count else [1]
    sections = tuple(itertools.pairwise(bounds))
    paths = ["/"] if pages > 0 else []
    for k, (start, stop) in enumerate(sections):
        paths.append(f"/{SECTIONS[k]}/index.html")
        paths += [f"/{SECTIONS[k]}/{_SLUGS[n % len(_SLUGS)]}-{n}.html"
                  for n in range(start + 1, stop)]
    return tuple(paths), sections, {path: n for n, path in enumerate(paths)}


@functools.lru_cache(maxsize=8)
def _titles(seed: int, pages: int) -> tuple[str, ...]:
    rng = stable_rng(seed, "docs-titles")
    return ("Testkit documentation", *(title_words(rng, 2, 5) for _ in range(1, pages)))
