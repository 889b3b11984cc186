"""Links of an HTML page: pages to crawl and assets the page needs, as absolute http(s) URLs."""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

from frontier_service.fetch.link_resolve import LinkResolver
from frontier_service.fetch.result import FetchResult

# Elements whose URL is another document to crawl, and those whose URL the page loads.
_PAGE_ATTRS = {"a": "href", "area": "href", "iframe": "src", "frame": "src"}
_ASSET_ATTRS = {
    "img": "src",
    "script": "src",
    "embed": "src",
    "source": "src",
    "video": "src",
    "audio": "src",
    "track": "src",
}
_PAGE_RELS = frozenset({"canonical", "alternate", "next", "prev"})
_SKIP_RELS = frozenset({"dns-prefetch", "preconnect"})  # an origin, not a resource
_SELECTOR = ", ".join(
    [f"{tag}[{attr}]" for tag, attr in {**_PAGE_ATTRS, **_ASSET_ATTRS}.items()] + ["link[href]"]
)
_WHATWG_REMOVED = str.maketrans("", "", "\t\n\r")


@dataclass(frozen=True)
class PageLinks:
    """Absolute http(s) URLs in document order, fragments dropped, each listed once."""

    base_url: str  # what relative links were resolved against (a <base href> wins)
    pages: list[str]
    assets: list[str]


def extract_links(body: bytes, url: str, *, charset: str | None = None) -> PageLinks:
    """Parse `body` (HTML fetched from final URL `url`) and resolve its links.

    Args:
        charset: the charset the response declared; without a usable one the parser
            honours a BOM or <meta charset> and otherwise reads UTF-8. Undecodable
            bytes become U+FFFD, never an exception.
    """
    tree = _parse(body, charset)
    base = _base_url(tree, url)
    pages: dict[str, None] = {}
    assets: dict[str, None] = {}
    resolve = LinkResolver(base, resolve_link).resolve
    for node in tree.css(_SELECTOR):
        tag = node.tag or ""
        if tag == "link":
            rels = set((node.attributes.get("rel") or "").lower().split())
            if rels & _SKIP_RELS:
                continue
            target, attr = (pages if rels & _PAGE_RELS else assets), "href"
        elif tag in _PAGE_ATTRS:
            target, attr = pages, _PAGE_ATTRS[tag]
        else:
            target, attr = assets, _ASSET_ATTRS[tag]
        absolute = resolve(node.attributes.get(attr))
        if absolute is not None:
            target[absolute] = None
    return PageLinks(base, list(pages), list(assets))


def links_from_fetch(result: FetchResult) -> PageLinks | None:
    """Links of a fetched page; None unless the response is HTML with a body (PDFs, images,
    JSON ... are archived as they are, never parsed)."""
    if not result.is_html or result.body is None:
        return None
    return extract_links(result.body, result.final_url, charset=result.charset)


def resolve_link(base: str, href: str | None) -> str | None:
    """`href` made absolute against `base`, fragment and userinfo dropped; None unless
    http(s) with a host.

    Applies the WHATWG clean-up browsers do first (trim surrounding whitespace, delete
    tabs and newlines); no further canonicalisation (the frontier does that).
    """
    if not href:
        return None
    cleaned = href.strip().translate(_WHATWG_REMOVED)
    try:
        parts = urlsplit(urljoin(base, cleaned))
    except ValueError:  # e.g. an unterminated IPv6 literal
        return None
    if "@" in parts.netloc:  # credentials in a link are never sent nor kept
        parts = parts._replace(netloc=parts.netloc.rpartition("@")[2])
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return urlunsplit(parts._replace(fragment=""))


def decode_html(body: bytes, charset: str | None) -> str | None:
    """`body` decoded with the declared charset (bad bytes replaced); None if it is unusable."""
    if not charset:
        return None
    try:
        info = codecs.lookup(charset.strip().strip("\"'"))
    except LookupError:
        return None
    if not getattr(info, "_is_text_encoding", True):  # base64, rot13 ... are not charsets
        return None
    return body.decode(info.name, errors="replace")


_UTF8_LABELS = frozenset({"utf-8", "utf8", "UTF-8", "Utf-8"})


def _parse(body: bytes, charset: str | None) -> LexborHTMLParser:
    if charset in _UTF8_LABELS:  # lexbor reads bytes as UTF-8 (bad bytes become U+FFFD): no copy
        return LexborHTMLParser(body)
    text = decode_html(body, charset)
    if text is not None:
        return LexborHTMLParser(text)
    return LexborHTMLParser(body, encoding=True)  # BOM, <meta charset>, else UTF-8


def _base_url(tree: LexborHTMLParser, url: str) -> str:
    """The document's base URL: the first <base href>, if it resolves to http(s)."""
    node: LexborNode | None = tree.css_first("base[href]")
    if node is not None:
        base = resolve_link(url, node.attributes.get("href"))
        if base is not None:
            return base
    return url
