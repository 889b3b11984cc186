"""Resolving a page's links quickly: plain string work for the common shapes of href.

`urljoin` + `urlsplit` + `urlunsplit` cost ~20 us a link, most of a page's link
extraction. Most hrefs are simple: absolute `http(s)://host/...`, root-relative
`/path`, or a relative path of plain characters. Those are resolved here with string
operations that give exactly what `resolve_link` (urljoin) gives; anything else falls
back to it. tests/frontier_service/fetch/test_link_resolve.py checks the two agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlsplit

_ABSOLUTE = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?=[/?#]|\Z)", re.ASCII)
_PLAIN = re.compile(r"[A-Za-z0-9._~/%!$&'()*+,;=@-]*(?:\?[A-Za-z0-9._~/%!$&'()*+,;=@:?|-]*)?",
                    re.ASCII)
_WHATWG_REMOVED = str.maketrans("", "", "\t\n\r")


class LinkResolver:
    """Resolves hrefs against one base URL; `fallback(base, href)` handles the rest."""

    def __init__(self, base: str, fallback: Callable[[str, str | None], str | None]) -> None:
        self.base = base
        self.fallback = fallback
        parts = urlsplit(base)
        origin = f"{parts.scheme}://{parts.netloc}"
        simple = (_ABSOLUTE.fullmatch(origin) is not None and "/." not in parts.path
                  and "//" not in parts.path and parts.path.startswith("/"))
        self._origin = origin if simple else None
        self._dir_segments = parts.path.split("/")[:-1] if simple else []

    def resolve(self, href: str | None) -> str | None:
        if not href:
            return None
        text = href.strip()
        if "\t" in text or "\n" in text or "\r" in text:
            text = text.translate(_WHATWG_REMOVED)
        head = text.split("#", 1)[0]
        if not head or head.endswith("?"):
            return self.fallback(self.base, href)
        first = head[0]
        if first == "h" and _ABSOLUTE.match(head) is not None:
            return head
        origin = self._origin
        if origin is None or _PLAIN.fullmatch(head) is None:
            return self.fallback(self.base, href)
        if first == "/":
            if head.startswith("//") or "/." in head.split("?", 1)[0]:
                return self.fallback(self.base, href)
            return origin + head
        path, question, query = head.partition("?")
        if first == "?" or ":" in path.split("/", 1)[0]:
            return self.fallback(self.base, href)
        return origin + _merge(self._dir_segments, path) + question + query


def _merge(base_dir: list[str], path: str) -> str:
    """urljoin's path merge for a relative path (no scheme, query or fragment)."""
    segments = [*base_dir, *path.split("/")]
    segments[1:-1] = [s for s in segments[1:-1] if s]
    resolved: list[str] = []
    for segment in segments:
        if segment == "..":
            if resolved:
                resolved.pop()
        elif segment != ".":
            resolved.append(segment)
    if segments[-1] in (".", ".."):
        resolved.append("")
    joined = "/".join(resolved)
    if not joined.startswith("/"):
        joined = "/" + joined
    return joined
