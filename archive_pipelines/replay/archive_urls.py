"""Archive URLs: where a URL a replayed page names is found inside the archive.

`ArchiveUrls` turns a URL as written in a captured page (relative, root-relative,
protocol-relative or absolute) into `<prefix><timestamp><modifier>/<absolute url>`, the
Wayback form the replay server answers, so the page stays inside the archive at its time.

What a browser does first is done here too: leading and trailing C0 controls and spaces
are stripped, tabs and newlines inside are dropped, and `\\` is `/` in http(s) URLs.
Only http and https URLs are rewritten; every other scheme (`data:`, `blob:`,
`javascript:`, `mailto:`, `about:`, `tel:` ...) and a bare `#fragment` are left alone, as
is an empty URL (the page itself).

Modifiers (as pywb names them) are hints to the replay server about what asks for the
resource: `im_` an image, `js_` a script, `cs_` a stylesheet, `oe_` an object, embed or
media, `if_` / `fr_` an iframe / frame (replayed without the banner), `id_` the original
bytes untouched, "" a page or a link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import quote, urljoin

MODIFIERS = frozenset({"", "id_", "im_", "js_", "cs_", "oe_", "if_", "fr_", "mp_"})

_TIMESTAMP = re.compile(r"[0-9]{1,14}", re.ASCII)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):", re.ASCII)
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))
_TAB_NEWLINE = re.compile(r"[\t\n\r]")
_AUTHORITY_END = re.compile(r"[/?#]")
_QUERY_START = re.compile(r"[?#]")
_LEADING_DOTS = re.compile(r"(?:\.\.?/)+")
_SPECIAL = frozenset({"http", "https"})
# Printable ASCII stays as it is when a page URL is made ASCII; the rest is percent-encoded.
_ASCII_SAFE = "".join(chr(c) for c in range(0x21, 0x7F))


class ArchiveUrlError(ValueError):
    """A timestamp, page URL or modifier the archive cannot form URLs with."""


@dataclass(frozen=True, slots=True)
class ArchiveUrls:
    """The archive URLs of one replayed page (keyword arguments only).

    Args:
        timestamp: 1-14 digits, the time the page is replayed at.
        page_url: the page's original absolute http(s) URL.
        prefix: what archive URLs start with ("/web/", or an absolute "http://host/web/").
        base: the URL relative URLs resolve against (a `<base href>`); the page URL if None.
    """

    timestamp: str = field(kw_only=True)
    page_url: str = field(kw_only=True)
    prefix: str = field(default="/web/", kw_only=True)
    base: str = field(default="", kw_only=True)

    def __post_init__(self) -> None:
        if not _TIMESTAMP.fullmatch(self.timestamp):
            raise ArchiveUrlError(f"a timestamp is 1 to 14 digits, not {self.timestamp[:40]!r}")
        page_url = _absolute_http(self.page_url)
        if page_url is None:
            raise ArchiveUrlError(f"not an absolute http(s) URL: {self.page_url[:200]!r}")
        object.__setattr__(self, "page_url", page_url)
        base = _absolute_http(self.base) if self.base else page_url
        object.__setattr__(self, "base", base or page_url)

    def with_base(self, href: str) -> ArchiveUrls:
        """These URLs with `href` (resolved against the current base) as the base; unchanged
        when `href` is no http(s) URL."""
        resolved = self.resolve(href)
        if resolved is None:
            return self
        return ArchiveUrls(timestamp=self.timestamp, page_url=self.page_url,
                           prefix=self.prefix, base=resolved)

    def resolve(self, url: str) -> str | None:
        """The absolute http(s) URL `url` names from this page; None when it is left alone."""
        cleaned = url.strip(_C0_AND_SPACE)
        if "\t" in cleaned or "\n" in cleaned or "\r" in cleaned:
            cleaned = _TAB_NEWLINE.sub("", cleaned)
        if not cleaned or cleaned[0] == "#":
            return None
        scheme_match = _SCHEME.match(cleaned)
        if scheme_match is not None:
            scheme = scheme_match.group(1).lower()
            if scheme not in _SPECIAL:
                return None
            rest = cleaned[scheme_match.end():].replace("\\", "/")
            if rest.startswith("//"):
                return scheme + ":" + rest
            if scheme != self.base[:self.base.index(":")]:
                # Another special scheme without `//`: a browser reads what follows as the host.
                return scheme + "://" + rest.lstrip("/")
            cleaned = rest  # the base's own scheme without `//`: relative to the base
        elif "\\" in cleaned:
            cleaned = cleaned.replace("\\", "/")
        return _join(self.base, cleaned)

    def rewrite(self, url: str, *, modifier: str = "") -> str:
        """`url` as an archive URL at this page's time; as it is when it is left alone."""
        if modifier not in MODIFIERS:
            raise ArchiveUrlError(f"unknown modifier {modifier!r}")
        resolved = self.resolve(url)
        if resolved is None:
            return url
        return f"{self.prefix}{self.timestamp}{modifier}/{resolved}"

    def archive_url(self, absolute_url: str, *, modifier: str = "") -> str:
        """The archive URL of an absolute URL, as given (no resolution)."""
        if modifier not in MODIFIERS:
            raise ArchiveUrlError(f"unknown modifier {modifier!r}")
        return f"{self.prefix}{self.timestamp}{modifier}/{absolute_url}"


def _absolute_http(url: str) -> str | None:
    """`url` as an ASCII absolute http(s) URL (non-ASCII percent-encoded as UTF-8); None if
    it is not one."""
    url = url.strip(_C0_AND_SPACE)
    match = _SCHEME.match(url)
    if match is None or match.group(1).lower() not in _SPECIAL:
        return None
    rest = url[match.end():]
    if not rest.startswith("//") or len(rest) == 2:
        return None
    if not url.isascii():
        url = quote(url, safe=_ASCII_SAFE)
    return match.group(1).lower() + url[match.end(1):]


@lru_cache(maxsize=8192)
def _join(base: str, url: str) -> str | None:
    """`url` resolved against `base` (RFC 3986, dot segments removed); None when it cannot
    be (a malformed authority such as `//[x`)."""
    if "." not in url or ("/." not in url and url[0] != "."):
        # no dot segment to remove: the common forms are joined without urljoin's parse
        authority_end = _AUTHORITY_END.search(base, base.index("//") + 2)
        host_end = authority_end.start() if authority_end is not None else len(base)
        if url[0] == "/":
            if url[1:2] != "/":
                return base[:host_end] + url
            if "[" not in url and "@" not in url:
                return base[:base.index(":") + 1] + url
        elif url[0] not in "?#;":
            query = _QUERY_START.search(base, host_end)
            path_end = query.start() if query is not None else len(base)
            slash = base.rfind("/", host_end, path_end)
            return (base[:slash + 1] if slash >= 0 else base[:host_end] + "/") + url
    elif url.startswith(("./", "../")):
        leading = _LEADING_DOTS.match(url)
        assert leading is not None
        rest = url[leading.end():]
        if rest and rest[0] not in "./?#;" and "/." not in rest:
            authority_end = _AUTHORITY_END.search(base, base.index("//") + 2)
            host_end = authority_end.start() if authority_end is not None else len(base)
            query = _QUERY_START.search(base, host_end)
            path_end = query.start() if query is not None else len(base)
            slash = base.rfind("/", host_end, path_end)
            directory = base[host_end:slash + 1] if slash >= 0 else "/"
            for _ in range(leading.group().count("../")):
                directory = directory[:directory.rfind("/", 0, len(directory) - 1) + 1] or "/"
            return base[:host_end] + directory + rest
    try:
        joined = urljoin(base, url)
    except ValueError:
        return None
    return joined if joined.startswith(("http://", "https://")) else None

