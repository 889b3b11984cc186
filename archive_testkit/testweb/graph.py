"""The link graph of the test web: which pages exist and what each page links to.

Pure and deterministic: `page_links(config, host, path)` is exactly the list of
`<a href>` values (after HTML unescaping) that the server puts in that page, in order.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Sequence
from urllib.parse import urljoin, urlsplit, urlunsplit

from archive_testkit.testweb.config import TestWebConfig, all_hosts
from archive_testkit.testweb.hosts import HostTraits, host_traits
from archive_testkit.testweb.seeding import below, stable_rng

__all__ = [
    "IDN_HOST",
    "PRIVATE_PAGES",
    "SPECIAL_TARGETS",
    "TRAP_TARGETS",
    "TestWebConfig",
    "absolute_links",
    "is_page_path",
    "links_from",
    "page_links",
    "page_path",
    "page_rng",
    "private_path",
    "relative_href",
]

IDN_HOST = "bücher.test"  # linked from junk links; served as a small page under its punycode name
PRIVATE_PAGES = 10  # /private/p0.html .. /private/p9.html on every host
SECTIONS = 10
LONG_URL_CHARS = 10_000

# Linked from pages of hosts with the `special` trait ({k} is 0..4).
SPECIAL_TARGETS = (
    "/redirect/3",
    "/redirect/12",
    "/loop/a",
    "/offsite",
    "/missing/{k}.html",
    "/error/{k}.html",
    "/doc/report-{k}.pdf",
    "/img/photo-{k}.png",
    "/api/item-{k}.json",
    "/enc/latin1.html",
    "/malformed/page.html",
)
# Linked from pages of hosts with the `traps` trait ({k} is 0..2).
TRAP_TARGETS = ("/slow/{k}.html", "/huge/{k}.html")

_PAGE_RE = re.compile(r"/s(\d+)/p(\d+)\.html")
_PRIVATE_RE = re.compile(r"/private/p(\d+)\.html")
_JUNK = (
    "mailto:webmaster@{host}",
    "javascript:void(0)",
    "ftp://ftp.{host}/pub/release-{n}.tar.gz",
    "data:text/html;base64,PGgxPmhlbGxvPC9oMT4=",
    "/search?q=red|green|blue&p={n}",
    "{page}%0A",
    "{head}\n{tail}",  # a raw newline inside the attribute (written as &#10;)
    "http://" + IDN_HOST + "/",
    "http://" + IDN_HOST + "/katalog/{n}.html",
    "tel:+15555550123",
    "  {page}  ",  # surrounding whitespace
)
_QUERIES = ("?ref=nav", "?utm_source=testweb&utm_medium=link", "?sort=asc&page=2", "?lang=en")


def page_path(index: int) -> str:
    """Path of ordinary page number `index` of any host (0 is the home page)."""
    return "/" if index == 0 else f"/s{index % SECTIONS}/p{index}.html"


def private_path(index: int) -> str:
    return f"/private/p{index}.html"


def is_page_path(config: TestWebConfig, path: str) -> bool:
    """Whether `path` (no query) is an ordinary or /private/ HTML page of every host."""
    if path == "/":
        return True
    if match := _PAGE_RE.fullmatch(path):
        section, index = int(match[1]), int(match[2])
        canonical = match[2] == str(index)  # no leading zeros
        return canonical and 0 < index < config.pages_per_host and section == index % SECTIONS
    if match := _PRIVATE_RE.fullmatch(path):
        return match[1] == str(int(match[1])) and int(match[1]) < PRIVATE_PAGES
    return False


def page_links(config: TestWebConfig, host: str, path: str) -> list[str]:
    """The href of every <a> in the page, in document order, exactly as a parser reads them."""
    traits = host_traits(config, host)
    if traits is None:
        raise ValueError(f"not a host of this test web: {host!r}")
    return links_from(config, traits, path, rng=page_rng(config, traits.host, path))


def page_rng(config: TestWebConfig, host: str, path: str) -> random.Random:
    """The generator behind a page: its links first, then whatever else the renderer draws."""
    return stable_rng(config.seed, "page", host, path)


def links_from(
    config: TestWebConfig, traits: HostTraits, path: str, *, rng: random.Random
) -> list[str]:
    """The links of a page, drawn from the page's generator (see page_rng)."""
    name = traits.host
    draw = rng.random
    extras = [_junk_link(rng, name) for _ in range(1 + below(rng, 3))]
    if draw() < 0.05:
        extras.append(_long_link(rng, config))
    if traits.special and draw() < 0.5:
        extras += [_fill(rng.choice(SPECIAL_TARGETS), rng, 5) for _ in range(1 + below(rng, 3))]
    if traits.traps and draw() < 0.1:
        extras.append(_fill(rng.choice(TRAP_TARGETS), rng, 3))
    if draw() < 0.1:
        extras.append(_same_host_form(draw, name, path, target=private_path(below(rng, PRIVATE_PAGES))))
    del extras[config.links_per_page :]
    # The ordinary links: other pages of this host, and pages of other hosts.
    paths = _page_paths(config.pages_per_host)
    hosts = _host_names(config)
    cross = config.cross_host_fraction if config.hosts > 1 else 0.0
    links = []
    for _ in range(config.links_per_page - len(extras)):
        if draw() < cross:
            other = int(draw() * (len(hosts) - 1))
            other += other >= traits.index  # never this host
            links.append(_cross_host_form(draw, hosts[other], paths))
        else:
            target = paths[int(draw() * len(paths))]
            links.append(_decorate(draw, _same_host_form(draw, name, path, target=target)))
    for extra in extras:
        links.insert(int(draw() * (len(links) + 1)), extra)
    return links


def absolute_links(config: TestWebConfig, host: str, path: str) -> list[str]:
    """The page's http(s) links resolved against it, fragments dropped, duplicates kept.

    Follows the WHATWG URL rules a browser applies first (strip surrounding whitespace,
    remove tabs and newlines); does no further canonicalisation.
    """
    traits = host_traits(config, host)
    if traits is None:
        raise ValueError(f"not a host of this test web: {host!r}")
    base = f"http://{traits.host}{path}"
    resolved = []
    for href in page_links(config, host, path):
        cleaned = href.strip().replace("\t", "").replace("\n", "").replace("\r", "")
        parts = urlsplit(urljoin(base, cleaned))
        if parts.scheme in ("http", "https") and parts.netloc:
            resolved.append(urlunsplit(parts._replace(fragment="")))
    return resolved


def _fill(template: str, rng: random.Random, count: int) -> str:
    return template.format(k=below(rng, count)) if "{k}" in template else template


def _same_host_form(draw: Callable[[], float], host: str, here: str, *, target: str) -> str:
    form = draw()
    if form < 0.45:
        return target
    if form < 0.70:
        return relative_href(here, target)
    if form < 0.90:
        return f"http://{host}{target}"
    # Equivalent spellings a canonicaliser should fold together.
    if form < 0.933:
        return f"http://{host.upper()}{target}"
    if form < 0.966:
        return f"http://{host}:80{target}"
    return "/./s0/.." + target if target != "/" else "/index/.."


def relative_href(here: str, target: str) -> str:
    """A relative reference from page `here` to absolute path `target` (both plain paths)."""
    here_dir = here[: here.rindex("/") + 1]
    if target.startswith(here_dir):
        return target[len(here_dir) :] or "./"
    return "../" * (here_dir.count("/") - 1) + target[1:]


def _decorate(draw: Callable[[], float], href: str) -> str:
    roll = draw()
    if roll < 0.08:
        return href + _QUERIES[int(roll * 50)]  # 0.08 * 50 = 4 queries
    if roll < 0.10:
        return href + f"?ref=nav#section-{int(roll * 300) % 6}"
    if roll > 0.92:
        return href + f"#section-{int(roll * 75) % 6}"
    return href


def _cross_host_form(draw: Callable[[], float], other_host: str, paths: Sequence[str]) -> str:
    roll = draw()
    target = "/" if roll < 0.3 else paths[int(draw() * len(paths))]
    scheme = "" if 0.3 <= roll < 0.4 else "http:"  # some protocol-relative
    return _decorate(draw, f"{scheme}//{other_host}{target}")


@functools.lru_cache(maxsize=8)
def _page_paths(pages: int) -> tuple[str, ...]:
    return tuple(page_path(n) for n in range(pages))


@functools.lru_cache(maxsize=8)
def _host_names(config: TestWebConfig) -> tuple[str, ...]:
    return tuple(all_hosts(config))


def _long_link(rng: random.Random, config: TestWebConfig) -> str:
    target = page_path(1 + below(rng, max(1, config.pages_per_host - 1)))
    prefix = f"{target}?q="
    return prefix + "long" * ((LONG_URL_CHARS - len(prefix)) // 4 + 1)


def _junk_link(rng: random.Random, host: str) -> str:
    template = _JUNK[below(rng, len(_JUNK))]
    page = page_path(1 + below(rng, 49))
    return template.format(host=host, page=page, n=below(rng, 9), head=page[:4], tail=page[4:])
