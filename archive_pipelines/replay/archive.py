"""What replay asks the catalog: a URL's capture nearest a moment (with its neighbours), a
URL's captures in time, the captures under a URL prefix; withdrawn URLs left out.

URLs are found by their SURT key (`surt.urlkey`), so a lookup forgives what people change
when they type a URL: the scheme (http and https are one URL), a leading `www.`, the case
of the host, the order of query arguments, a trailing slash, the default port, session ids
in the query. Everything here blocks (SQL): the server calls it from its worker threads.

The answers of `nearest` are kept for `cache_seconds` (an LRU of `cache_entries`): a page
and its assets asked again within that time cost no SQL. A capture ingested meanwhile shows
up in neighbours' links once that time has passed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from archive_pipelines.catalog import Capture, Catalog, KeyRange, Nearest
from archive_pipelines.replay.exclusions import Exclusions
from archive_pipelines.replay.lru import SizedLru
from archive_pipelines.replay.memento import Memento, Neighbours
from archive_pipelines.surt import urlkey

LATEST_MS = 1 << 62  # "now" for a lookup without a time: the latest capture


@dataclass(frozen=True)
class Found:
    """The capture chosen for a request, and its neighbours as Memento names them."""

    capture: Capture
    neighbours: Neighbours

    @property
    def memento(self) -> Memento:
        return as_memento(self.capture)


def as_memento(capture: Capture) -> Memento:
    return Memento(capture.url, capture.fetched_ms)


class ReplayArchive:
    """The catalog's replayable captures, as replay reads them."""

    def __init__(self, catalog: Catalog, *, withdrawn: Exclusions, cache_seconds: float = 0.0,
                 cache_entries: int = 10_000) -> None:
        self.catalog = catalog
        self.withdrawn = withdrawn
        self.cache_seconds = cache_seconds
        self.cache: SizedLru[tuple[str, int | None], tuple[float, Found | None]] = SizedLru(
            max(cache_entries, 1), size_of=lambda _value: 1)

    def excluded(self, url: str) -> bool:
        return self.withdrawn.excludes_url(url)

    def nearest(self, url: str, *, at_ms: int | None) -> Found | None:
        """The capture of `url` nearest `at_ms` (the latest when None), or None."""
        key = (urlkey(url), at_ms)
        if self.cache_seconds > 0:
            kept = self.cache.get(key)
            if kept is not None and kept[0] > time.monotonic():
                return kept[1]
        with self.catalog.reading() as tx:
            nearest = tx.replay.nearest(key[0], at_ms=LATEST_MS if at_ms is None else at_ms)
        found = None if nearest is None else Found(nearest.capture, neighbours_of(nearest))
        if self.cache_seconds > 0:
            self.cache.put(key, (time.monotonic() + self.cache_seconds, found))
        return found

    def timeline(self, url: str, *, limit: int) -> list[Capture]:
        """The captures of `url`, oldest first, at most `limit`."""
        with self.catalog.reading() as tx:
            return tx.replay.timeline(urlkey(url), limit=limit)

    def under_prefix(self, url: str, *, limit: int) -> list[Capture]:
        """Captures of every URL that starts like `url` (SURT order), at most `limit`,
        withdrawn ones left out."""
        with self.catalog.reading() as tx:
            found = tx.replay.page(KeyRange.prefix(urlkey(url)), limit=limit)
        return [capture for capture in found if not self.withdrawn.excludes_key(capture.urlkey)]


def neighbours_of(found: Nearest) -> Neighbours:
    prev, next_ = found.prev, found.next
    return Neighbours(first=as_memento(found.first),
                      prev=None if prev is None else as_memento(prev),
                      next=None if next_ is None else as_memento(next_),
                      last=as_memento(found.last))


def mementos(captures: Sequence[Capture]) -> list[Memento]:
    return [as_memento(capture) for capture in captures]
