"""The captures replay, CDX and Memento answer from: a URL's captures in time, the nearest to
a moment with its neighbours, and SURT-ordered key ranges read in keyset pages.

Every query here walks `ix_page_fetch_urlkey (urlkey, fetched_ms)`: one index seek and at most
`limit` rows, however many captures a URL or a prefix has (no OFFSET but `page_of`'s, no
whole-timeline read).

Which captures count (`REPLAYABLE`): a `page`, `request` or `redirect` capture that got an HTTP
response (a status) and either references its stored body (`body_blob_id`, whatever the status:
a recorded 404 page replays as a 404) or has a 3xx status (a redirect, replayed from its
Location, with or without a body). Left out: fetches that failed (no status: network errors,
robots.txt refusals, pages never fetched) and responses whose body the store lacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, func, or_, select, tuple_
from sqlalchemy.orm import Session

from archive_pipelines.catalog.capture_repository import Capture, read_captures, select_captures
from archive_pipelines.catalog.models import PageFetch
from archive_pipelines.catalog.repository_base import Repository, _reads

REPLAYABLE: ColumnElement[bool] = and_(
    PageFetch.status_code.is_not(None),
    or_(PageFetch.body_blob_id.is_not(None), PageFetch.status_code.between(300, 399)))

# (urlkey, fetched_ms, id): a capture's place in SURT order, where a keyset page resumes.
CaptureKey = tuple[str, int, int]


def capture_key(capture: Capture) -> CaptureKey:
    """Where `capture` lies in SURT order (a page's last row: where the next page starts)."""
    return capture.urlkey, capture.fetched_ms, capture.id


@dataclass(frozen=True)
class KeyRange:
    """The urlkeys a lookup covers: exactly `start` (`stop` None), or every key from `start`
    (inclusive) to `stop` (exclusive) in byte order."""

    start: str
    stop: str | None = None

    @classmethod
    def exact(cls, key: str) -> KeyRange:
        return cls(key)

    @classmethod
    def prefix(cls, prefix: str) -> KeyRange:
        """Every key that starts with `prefix` (not empty)."""
        if not prefix:
            raise ValueError("an empty key prefix")
        return cls(prefix, key_after_prefix(prefix))


def key_after_prefix(prefix: str) -> str:
    """The least string above every string that starts with `prefix` (code-point order, which
    is UTF-8 byte order): its last character incremented."""
    while prefix and prefix[-1] == "\U0010ffff":
        prefix = prefix[:-1]
    if not prefix:
        raise ValueError("no key follows every key with this prefix")
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


@dataclass(frozen=True)
class Nearest:
    """The capture nearest a moment (ties go to the earlier) and its neighbours in time:
    the URL's first and last captures, and the ones just before and after `capture` (None
    where there is none)."""

    capture: Capture
    first: Capture
    prev: Capture | None
    next: Capture | None
    last: Capture


def _of_key(key: str) -> Select[Any]:
    return select_captures().where(PageFetch.urlkey == key, REPLAYABLE)


def _in_time(query: Select[Any], *, from_ms: int | None, to_ms: int | None) -> Select[Any]:
    if from_ms is not None:
        query = query.where(PageFetch.fetched_ms >= from_ms)
    if to_ms is not None:
        query = query.where(PageFetch.fetched_ms <= to_ms)
    return query


def _in_range(query: Select[Any], keys: KeyRange) -> Select[Any]:
    if keys.stop is None:
        return query.where(PageFetch.urlkey == keys.start)
    return query.where(PageFetch.urlkey >= keys.start, PageFetch.urlkey < keys.stop)


def _in_time_order(query: Select[Any], *, reverse: bool) -> Select[Any]:
    if reverse:
        return query.order_by(PageFetch.fetched_ms.desc(), PageFetch.id.desc())
    return query.order_by(PageFetch.fetched_ms, PageFetch.id)


def _first(session: Session, query: Select[Any]) -> Capture | None:
    found = read_captures(session, query.limit(1))
    return found[0] if found else None


class ReplayRepository(Repository):
    """Replayable captures (see the module docstring) by SURT key."""

    @_reads
    def timeline(self, session: Session, urlkey: str, *, from_ms: int | None = None,
                 to_ms: int | None = None, limit: int | None = None,
                 reverse: bool = False) -> list[Capture]:
        """A URL's captures fetched within [from_ms, to_ms] (either open), oldest first (by
        fetched_ms, then id; newest first when `reverse`), at most `limit`."""
        query = _in_time_order(_in_time(_of_key(urlkey), from_ms=from_ms, to_ms=to_ms),
                               reverse=reverse)
        return read_captures(session, query if limit is None else query.limit(limit))

    @_reads
    def nearest(self, session: Session, urlkey: str, *, at_ms: int) -> Nearest | None:
        """The capture of `urlkey` nearest `at_ms` by |fetched_ms - at_ms| (a tie: the
        earlier) with its neighbours; None when the URL has no capture. Five index seeks."""
        before = _first(session, _in_time_order(_of_key(urlkey).where(
            PageFetch.fetched_ms <= at_ms), reverse=True))
        after = _first(session, _in_time_order(_of_key(urlkey).where(
            PageFetch.fetched_ms > at_ms), reverse=False))
        if before is None and after is None:
            return None
        if before is not None and (after is None
                                   or at_ms - before.fetched_ms <= after.fetched_ms - at_ms):
            capture, next_ = before, after
            prev = _first(session, _in_time_order(_of_key(urlkey).where(
                tuple_(PageFetch.fetched_ms, PageFetch.id) < (capture.fetched_ms, capture.id)),
                reverse=True))
        else:
            assert after is not None
            capture, prev = after, before
            next_ = _first(session, _in_time_order(_of_key(urlkey).where(
                tuple_(PageFetch.fetched_ms, PageFetch.id) > (capture.fetched_ms, capture.id)),
                reverse=False))
        first = capture if prev is None else _first(
            session, _in_time_order(_of_key(urlkey), reverse=False))
        last = capture if next_ is None else _first(
            session, _in_time_order(_of_key(urlkey), reverse=True))
        assert first is not None and last is not None
        return Nearest(capture=capture, first=first, prev=prev, next=next_, last=last)

    @_reads
    def page(self, session: Session, keys: KeyRange, *, limit: int,
             after: CaptureKey | None = None, reverse: bool = False,
             from_ms: int | None = None, to_ms: int | None = None) -> list[Capture]:
        """Up to `limit` captures under `keys`, fetched within [from_ms, to_ms], in SURT order
        (urlkey, fetched_ms, id; descending when `reverse`), starting after `after` (the
        previous page's last `capture_key`)."""
        query = _in_time(_in_range(select_captures().where(REPLAYABLE), keys),
                         from_ms=from_ms, to_ms=to_ms)
        place = tuple_(PageFetch.urlkey, PageFetch.fetched_ms, PageFetch.id)
        if after is not None:
            query = query.where(place < after if reverse else place > after)
        if reverse:
            query = query.order_by(PageFetch.urlkey.desc(), PageFetch.fetched_ms.desc(),
                                   PageFetch.id.desc())
        else:
            query = query.order_by(PageFetch.urlkey, PageFetch.fetched_ms, PageFetch.id)
        return read_captures(session, query.limit(limit))

    @_reads
    def page_of(self, session: Session, keys: KeyRange, *, number: int, size: int,
                from_ms: int | None = None, to_ms: int | None = None) -> list[Capture]:
        """Page `number` (from 0) of `size` captures under `keys` in SURT order: the CDX API's
        numbered pages (an offset: later pages of a huge prefix cost more; `page` resumes
        from a key instead)."""
        query = _in_time(_in_range(select_captures().where(REPLAYABLE), keys),
                         from_ms=from_ms, to_ms=to_ms)
        query = query.order_by(PageFetch.urlkey, PageFetch.fetched_ms, PageFetch.id)
        return read_captures(session, query.offset(number * size).limit(size))

    @_reads
    def count(self, session: Session, keys: KeyRange, *, from_ms: int | None = None,
              to_ms: int | None = None) -> int:
        """How many captures lie under `keys`, fetched within [from_ms, to_ms]."""
        query = _in_time(_in_range(select(func.count()).select_from(PageFetch).where(REPLAYABLE),
                                   keys), from_ms=from_ms, to_ms=to_ms)
        return int(session.scalar(query) or 0)
