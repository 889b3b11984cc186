"""URL prefixes an operator has withdrawn from replay, CDX answers and TimeMaps alike.

A prefix is a URL as people write it (`http://example.com/private/`, `example.com/`,
`https://www.example.com/a`) and withdraws every URL that starts with it, whatever the scheme
and `www.`: it is compared as a SURT key prefix, the form the catalog files captures under
(`surt.urlkey`). A prefix ending in `/` withdraws what lies below that folder and the folder
itself (`/private/` withdraws `/private` and `/private/x`, not `/privateer`); a host
(`example.com` or `example.com/`) withdraws the whole host. `*.example.com` withdraws the
domain: the host and every subdomain. Blank lines and lines starting with `#` are ignored
(`from_lines`)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from archive_pipelines.surt import surt, urlkey


class BadExclusion(ValueError):
    """A line that names no URL prefix."""


def _key_prefixes(entry: str) -> tuple[list[str], list[str]]:
    """(key prefixes, exact keys) that `entry` withdraws."""
    text = entry.strip()
    if not text or any(c.isspace() for c in text):
        raise BadExclusion(f"an exclusion is one URL prefix, not {entry[:200]!r}")
    if text.startswith("*."):
        host, bracket, _path = surt(text[2:]).partition(")")
        if not bracket or not host:
            raise BadExclusion(f"{entry[:200]!r} names no domain")
        return [host + ")", host + ","], []
    key = surt(text)
    if ")" not in key:
        raise BadExclusion(f"{entry[:200]!r} names no URL with a host")
    if key.endswith(")/"):
        return [key[:-1]], []  # the whole host, `com,example)` (its root included)
    if text.endswith("/") and not key.endswith("/"):
        return [key + "/"], [key]  # the folder's contents and the folder itself
    return [key], []


class Exclusions:
    """Withdrawn URL prefixes (see the module docstring). Lookups are a binary search."""

    def __init__(self, prefixes: Iterable[str] = ()) -> None:
        keys: list[str] = []
        exact: set[str] = set()
        self.entries: tuple[str, ...] = tuple(prefixes)
        for entry in self.entries:
            more, also = _key_prefixes(entry)
            keys += more
            exact.update(also)
        # Keep the prefixes no other covers: then at most one can cover a key, the greatest
        # not after it.
        kept: list[str] = []
        for key in sorted(set(keys)):
            if not (kept and key.startswith(kept[-1])):
                kept.append(key)
        self._prefixes = kept
        self._exact = frozenset(key for key in exact if self._covering(key) is None)

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> Exclusions:
        """From a file's lines: one prefix a line, `#` comments and blank lines ignored."""
        return cls(line.strip() for line in lines
                   if line.strip() and not line.lstrip().startswith("#"))

    def __bool__(self) -> bool:
        return bool(self._prefixes or self._exact)

    def excludes_url(self, url: str) -> bool:
        """Whether `url` is withdrawn."""
        return self.excludes_key(urlkey(url))

    def excludes_key(self, key: str) -> bool:
        """Whether a capture filed under `key` (`surt.urlkey`) is withdrawn."""
        return key in self._exact or self._covering(key) is not None

    def covering_prefix(self, key: str) -> str | None:
        """The withdrawn key prefix `key` lies under (a scan may skip past all of it), or None
        (also when only `key` itself is withdrawn)."""
        return self._covering(key)

    def _covering(self, key: str) -> str | None:
        at = bisect.bisect_right(self._prefixes, key) - 1
        if at >= 0 and key.startswith(self._prefixes[at]):
            return self._prefixes[at]
        return None
