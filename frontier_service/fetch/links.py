"""Links of an HTML page or a stylesheet: pages to crawl and the assets a browser would load
for it, as absolute http(s) URLs, each asset with what it is loaded as; and a page's title,
read in the same walk of the same parse (the page record keeps it)."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit, urlunsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

from frontier_service.fetch.css_links import css_references
from frontier_service.fetch.link_resolve import LinkResolver
from frontier_service.fetch.result import FetchResult
from frontier_service.fetch.srcset import srcset_urls
from frontier_service.frontier.frontier_record import ResourceType

R = ResourceType
# Elements whose URL is another document to crawl, and the URL attributes a page loads.
_PAGE_ATTRS = {"a": "href", "area": "href", "iframe": "src", "frame": "src"}
_ASSET_ATTRS: dict[str, tuple[tuple[str, ResourceType], ...]] = {
    "img": (("src", R.IMAGE),),
    "script": (("src", R.SCRIPT),),
    "embed": (("src", R.OTHER),),
    "source": (("src", R.MEDIA),),  # in <video>/<audio>; in <picture> it has a srcset
    "video": (("src", R.MEDIA), ("poster", R.IMAGE)),
    "audio": (("src", R.MEDIA),),
    "track": (("src", R.MEDIA),),
    "object": (("data", R.OTHER),),
    "body": (("background", R.IMAGE),),
}
_SRCSET_TAGS = frozenset({"img", "source"})
_PAGE_RELS = frozenset({"canonical", "alternate", "next", "prev"})
_SKIP_RELS = frozenset({"dns-prefetch", "preconnect"})  # an origin, not a resource
_ICON_RELS = frozenset({"icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon"})
_PRELOAD_AS = {"style": R.STYLESHEET, "script": R.SCRIPT, "font": R.FONT, "image": R.IMAGE,
               "audio": R.MEDIA, "video": R.MEDIA, "track": R.MEDIA, "document": R.DOCUMENT}
_SELECTOR = ", ".join([*(f"{tag}[{attr}]" for tag, attr in _PAGE_ATTRS.items()),
                       "img", "script[src]", "embed[src]", "source", "video", "audio[src]",
                       "track[src]", "object[data]", "body[background]", "input[src]", "link",
                       "style", "title"])
_WHATWG_REMOVED = str.maketrans("", "", "\t\n\r")
MAX_TITLE_CHARS = 1_000  # the page record's (and the catalog's) limit
_ASCII_WHITESPACE = re.compile(r"[\t\n\f\r ]+")
_FOREIGN_ROOTS = frozenset({"svg", "math"})  # their <title> is not the document's
CSS_TYPES = frozenset({"text/css"})
# What a response to a stylesheet request may be labelled and still be read as CSS.
_LOOSE_CSS_TYPES = frozenset({None, "text/plain", "application/octet-stream"})


@dataclass(frozen=True)
class PageLinks:
    """Absolute http(s) URLs in document order, fragments dropped, each listed once.

    `asset_types[i]` is what `assets[i]` is loaded as; `assets_over_budget` counts the
    further distinct asset references the budget left out (unresolved: not yet known to
    be valid URLs). `title` is an HTML page's document title (`page_title`); None for a
    stylesheet, and for a page without one.
    """

    base_url: str  # what relative links were resolved against (a <base href> wins)
    pages: list[str]
    assets: list[str]
    asset_types: list[ResourceType] = field(default_factory=list)
    assets_over_budget: int = 0
    title: str | None = None

    def assets_by_type(self) -> dict[ResourceType, list[str]]:
        grouped: dict[ResourceType, list[str]] = {}
        for url, kind in zip(self.assets, self.asset_types, strict=True):
            grouped.setdefault(kind, []).append(url)
        return grouped


class _Assets:
    """A page's assets, first kind wins, up to `limit`; the references past it are counted."""

    def __init__(self, resolver: LinkResolver, limit: int | None) -> None:
        self.resolve = resolver.resolve
        self.limit = limit
        self.found: dict[str, ResourceType] = {}
        self.over = 0
        self._raw: set[str] = set()  # references as written, so that repeats count once

    def add(self, raw: str | None, kind: ResourceType) -> None:
        if not raw:
            return
        if self.limit is not None:
            if len(self.found) >= self.limit:
                if raw not in self._raw and raw[:5].lower() != "data:":
                    self._raw.add(raw)
                    self.over += 1
                return
            self._raw.add(raw)
        absolute = self.resolve(raw)
        if absolute is not None and absolute not in self.found:
            self.found[absolute] = kind

    def add_css(self, text: str) -> None:
        for raw, kind in css_references(text):
            self.add(raw, kind)

    def links(self, base: str, pages: Iterable[str] = (), *, title: str | None = None) -> PageLinks:
        return PageLinks(base, list(pages), list(self.found), list(self.found.values()),
                         self.over, title)


def extract_links(body: bytes, url: str, *, charset: str | None = None,
                  max_assets: int | None = None) -> PageLinks:
    """Parse `body` (HTML fetched from final URL `url`) and resolve its links; read its title
    in the same walk.

    Args:
        charset: the charset the response declared; without a usable one the parser
            honours a BOM or <meta charset> and otherwise reads UTF-8. Undecodable
            bytes become U+FFFD, never an exception.
        max_assets: keep at most this many assets (None: all).
    """
    tree = _parse(body, charset)
    base = _base_url(tree, url)
    pages: dict[str, None] = {}
    resolver = LinkResolver(base, resolve_link)
    resolve = resolver.resolve
    assets = _Assets(resolver, max_assets)
    title_node: LexborNode | None = None
    for node in tree.css(_SELECTOR):
        tag = node.tag or ""
        attributes = node.attributes
        if tag in _PAGE_ATTRS:
            absolute = resolve(attributes.get(_PAGE_ATTRS[tag]))
            if absolute is not None:
                pages[absolute] = None
        elif tag == "link":
            _link(attributes, pages, assets)
        elif tag == "style":
            assets.add_css(node.text(deep=True))
        elif tag == "title":
            if title_node is None and not _in_foreign_content(node):
                title_node = node
        elif tag == "input":
            if (attributes.get("type") or "").strip().lower() == "image":
                assets.add(attributes.get("src"), R.IMAGE)
        else:
            for attr, kind in _ASSET_ATTRS[tag]:
                assets.add(attributes.get(attr), kind)
            if tag in _SRCSET_TAGS and (srcset := attributes.get("srcset")):
                for candidate in srcset_urls(srcset):
                    assets.add(candidate, R.IMAGE)
    for node in tree.css("[style]"):  # a second walk costs ~2% of a page; no duplicates
        if style := node.attributes.get("style"):
            assets.add_css(style)
    return assets.links(base, pages, title=None if title_node is None else page_title(title_node))


def page_title(node: LexborNode) -> str | None:
    """The text of a <title> as `document.title` gives it (ASCII whitespace stripped and
    collapsed), cut to MAX_TITLE_CHARS; None when that leaves nothing."""
    text = _ASCII_WHITESPACE.sub(" ", node.text(deep=True)).strip(" ")
    return text[:MAX_TITLE_CHARS].rstrip(" ") or None


def _in_foreign_content(node: LexborNode) -> bool:
    """Whether `node` is inside inline SVG or MathML (whose <title> names a drawing)."""
    parent = node.parent
    while parent is not None:
        if parent.tag in _FOREIGN_ROOTS:
            return True
        parent = parent.parent
    return False


def _link(attributes: dict[str, str | None], pages: dict[str, None], assets: _Assets) -> None:
    """A <link>: a page (canonical, alternate ...), or an asset of the kind its rel and
    `as` say."""
    rels = set((attributes.get("rel") or "").lower().split())
    if rels & _SKIP_RELS:
        return
    href = attributes.get("href")
    if "stylesheet" in rels:  # also "alternate stylesheet"
        assets.add(href, R.STYLESHEET)
        return
    if rels & _PAGE_RELS:
        absolute = assets.resolve(href)
        if absolute is not None:
            pages[absolute] = None
        return
    kind = R.OTHER  # manifest, prefetch without `as`, and rels no browser loads for the page
    if rels & _ICON_RELS:
        kind = R.IMAGE
    elif "modulepreload" in rels:
        kind = R.SCRIPT
    elif rels & {"preload", "prefetch"}:
        kind = _PRELOAD_AS.get((attributes.get("as") or "").strip().lower(), R.OTHER)
    assets.add(href, kind)
    if kind is R.IMAGE and (srcset := attributes.get("imagesrcset")):
        for candidate in srcset_urls(srcset):
            assets.add(candidate, R.IMAGE)


def extract_stylesheet_links(body: bytes, url: str, *, charset: str | None = None,
                             max_assets: int | None = None) -> PageLinks:
    """The URLs a stylesheet fetched from `url` loads (fonts, images, @imports), resolved
    against the stylesheet's URL."""
    assets = _Assets(LinkResolver(url, resolve_link), max_assets)
    assets.add_css(decode_css(body, charset))
    return assets.links(url)


def links_from_fetch(result: FetchResult, *, kind: ResourceType = ResourceType.DOCUMENT,
                     max_assets: int | None = None) -> PageLinks | None:
    """Links of a fetched page or stylesheet (`kind`: what it was fetched as); None for other
    bodies (PDFs, images, JSON ... are archived as they are, never parsed)."""
    if result.body is None:
        return None
    if result.is_html:
        return extract_links(result.body, result.final_url, charset=result.charset,
                             max_assets=max_assets)
    if result.content_type in CSS_TYPES or (kind is R.STYLESHEET
                                            and result.content_type in _LOOSE_CSS_TYPES):
        return extract_stylesheet_links(result.body, result.final_url, charset=result.charset,
                                        max_assets=max_assets)
    return None


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


def decode_css(body: bytes, charset: str | None) -> str:
    """A stylesheet's text: a BOM wins, then the declared charset, then `@charset`, then
    UTF-8 (as CSS Syntax decodes it, without the referring page's charset)."""
    for bom, name in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                      (codecs.BOM_UTF16_BE, "utf-16-be")):
        if body.startswith(bom):
            return body[len(bom):].decode(name, errors="replace")
    close = body.find(b'";', 10, 60) if body.startswith(b'@charset "') else -1
    declared = body[10:close].decode("ascii", "replace") if close > 10 else None
    if declared is not None and declared.lower().startswith("utf-16"):
        declared = "utf-8"  # bytes that say so in ASCII are not UTF-16
    for label in (charset, declared):
        text = decode_html(body, label)
        if text is not None:
            return text
    return body.decode("utf-8", errors="replace")


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
