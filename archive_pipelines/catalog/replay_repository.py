"""The captures replay, CDX and Memento answer from: a URL's captures in time, the nearest to
a moment with its neighbours, and SURT-ordered key ranges read in keyset pages.

Every query here walks `ix_page_fetch_urlkey (urlkey, fetched_ms, id)` in its order: one
seek, at most `limit` rows, however many captures a URL or a prefix has (no OFFSET but
`page_of`'s, no whole-timeline read).

Which captures count (`REPLAYABLE`): a `page`, `request` or `redirect` capture that got an HTTP
response (a status) and either references its stored body (`body_blob_id`, whatever the status:
a recorded 404 page replays as a 404) or has a 3xx status (a redirect, replayed from its
Location, with or without a body). Left out: fetches that failed (no status: network errors,
robots.txt refusals, pages never fetched), responses whose body the store lacks, and a browser
page load's `screenshot` and `dom` captures (they bear the page's URL and time, and are no
answer for it).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Integer,
    Select,
    and_,
    bindparam,
    func,
    literal_column,
    or_,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.orm import Session

from archive_pipelines.catalog.capture_repository import Capture, select_captures
from archive_pipelines.catalog.models import EXCHANGE_KINDS, PageFetch
from archive_pipelines.catalog.repository_base import Repository, _reads

REPLAYABLE: ColumnElement[bool] = and_(
    PageFetch.kind.in_(EXCHANGE_KINDS),
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
    following = ord(prefix[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:  # surrogates are no characters: UTF-8 cannot hold them
        following = 0xE000
    return prefix[:-1] + chr(following)


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


@functools.cache
def _statement(*, exact: bool = True, since: bool = False, until: bool = False,
               resume: bool = False, by_key: bool = False, reverse: bool = False,
               limited: bool = True, offset: bool = False) -> Select[Any]:
    """The captures query of this shape, its values bound at execution (`start`, `stop`,
    `from_ms`, `to_ms`, `after_key`, `after_ms`, `after_id`, `limit`, `offset`): built once,
    so a lookup costs its execution, not SQLAlchemy's construction of the statement."""
    query = select_captures().where(REPLAYABLE)
    if exact:
        query = query.where(PageFetch.urlkey == bindparam("start"))
    else:
        query = query.where(PageFetch.urlkey >= bindparam("start"),
                            PageFetch.urlkey < bindparam("stop"))
    if since:
        query = query.where(PageFetch.fetched_ms >= bindparam("from_ms"))
    if until:
        query = query.where(PageFetch.fetched_ms <= bindparam("to_ms"))
    order = [PageFetch.urlkey, PageFetch.fetched_ms, PageFetch.id] if by_key else [
        PageFetch.fetched_ms, PageFetch.id]
    if resume:
        place = tuple_(*order)
        mark = tuple_(*([bindparam("after_key")] if by_key else []), bindparam("after_ms"),
                      bindparam("after_id"))
        query = query.where(place < mark if reverse else place > mark)
    query = query.order_by(*(column.desc() for column in order) if reverse else order)
    if limited:
        query = query.limit(bindparam("limit", type_=Integer()))
    if offset:
        query = query.offset(bindparam("offset", type_=Integer()))
    return query


# part -> (since, until, newest first, rows): what `nearest` reads of a URL's timeline.
_NEAREST_PARTS = {"before": (False, True, True, 2), "after": (True, False, False, 2),
                  "first": (False, False, False, 1), "last": (False, False, True, 1)}


@functools.cache
def _nearest_statement() -> CompoundSelect[Any]:
    """The four reads of `nearest` as one UNION ALL (one round trip), each tagged by `part`."""
    return union_all(*(
        select(literal_column(f"'{part}'").label("part"),
               *_statement(since=since, until=until, reverse=reverse, limited=False)
               .limit(rows).subquery(part).c)
        for part, (since, until, reverse, rows) in _NEAREST_PARTS.items()))


def _captures(session: Session, query: Select[Any], values: dict[str, Any]) -> list[Capture]:
    return [Capture(*row) for row in session.connection().execute(query, values)]


def _one(session: Session, query: Select[Any], values: dict[str, Any]) -> Capture | None:
    found = _captures(session, query, {**values, "limit": 1})
    return found[0] if found else None


def _window(keys: KeyRange, from_ms: int | None, to_ms: int | None) -> dict[str, Any]:
    return {"start": keys.start, "stop": keys.stop, "from_ms": from_ms, "to_ms": to_ms}


def _shape(keys: KeyRange, from_ms: int | None, to_ms: int | None) -> dict[str, bool]:
    return {"exact": keys.stop is None, "since": from_ms is not None, "until": to_ms is not None}


class ReplayRepository(Repository):
    """Replayable captures (see the module docstring) by SURT key."""

    @_reads
    def timeline(self, session: Session, urlkey: str, *, from_ms: int | None = None,
                 to_ms: int | None = None, limit: int | None = None,
                 reverse: bool = False) -> list[Capture]:
        """A URL's captures fetched within [from_ms, to_ms] (either open), oldest first (by
        fetched_ms, then id; newest first when `reverse`), at most `limit`."""
        keys = KeyRange.exact(urlkey)
        query = _statement(**_shape(keys, from_ms, to_ms), reverse=reverse,
                           limited=limit is not None)
        return _captures(session, query, {**_window(keys, from_ms, to_ms), "limit": limit})

    @_reads
    def nearest(self, session: Session, urlkey: str, *, at_ms: int) -> Nearest | None:
        """The capture of `urlkey` nearest `at_ms` by |fetched_ms - at_ms| (a tie: the
        earlier) with its neighbours; None when the URL has no capture. One statement, four
        index seeks: the two captures at or before `at_ms`, the two after, the first and the
        last."""
        found: dict[str, list[Capture]] = {part: [] for part in _NEAREST_PARTS}
        for part, *row in session.connection().execute(
                _nearest_statement(), {"start": urlkey, "to_ms": at_ms, "from_ms": at_ms + 1}):
            found[part].append(Capture(*row))
        for part, (_since, _until, reverse, _limit) in _NEAREST_PARTS.items():
            found[part].sort(key=lambda c: (c.fetched_ms, c.id), reverse=reverse)
        before, after = found["before"], found["after"]
        if not before and not after:
            return None
        if before and (not after or at_ms - before[0].fetched_ms <= after[0].fetched_ms - at_ms):
            capture, prev = before[0], before[1] if len(before) > 1 else None
            next_ = after[0] if after else None
        else:
            capture, next_ = after[0], after[1] if len(after) > 1 else None
            prev = before[0] if before else None
        return Nearest(capture=capture, first=found["first"][0], prev=prev, next=next_,
                       last=found["last"][0])

    @_reads
    def page(self, session: Session, keys: KeyRange, *, limit: int,
             after: CaptureKey | None = None, reverse: bool = False,
             from_ms: int | None = None, to_ms: int | None = None) -> list[Capture]:
        """Up to `limit` captures under `keys`, fetched within [from_ms, to_ms], in SURT order
        (urlkey, fetched_ms, id; descending when `reverse`), starting after `after` (the
        previous page's last `capture_key`)."""
        query = _statement(**_shape(keys, from_ms, to_ms), resume=after is not None,
                           by_key=True, reverse=reverse)
        values = {**_window(keys, from_ms, to_ms), "limit": limit}
        if after is not None:
            values.update(after_key=after[0], after_ms=after[1], after_id=after[2])
        return _captures(session, query, values)

    @_reads
    def page_of(self, session: Session, keys: KeyRange, *, number: int, size: int,
                from_ms: int | None = None, to_ms: int | None = None) -> list[Capture]:
        """Page `number` (from 0) of `size` captures under `keys` in SURT order: the CDX API's
        numbered pages (an offset: later pages of a huge prefix cost more; `page` resumes
        from a key instead)."""
        query = _statement(**_shape(keys, from_ms, to_ms), by_key=True, offset=True)
        return _captures(session, query, {**_window(keys, from_ms, to_ms), "limit": size,
                                          "offset": number * size})

    @_reads
    def count(self, session: Session, keys: KeyRange, *, from_ms: int | None = None,
              to_ms: int | None = None) -> int:
        """How many captures lie under `keys`, fetched within [from_ms, to_ms]."""
        query = select(func.count()).select_from(PageFetch).where(REPLAYABLE)
        query = query.where(PageFetch.urlkey == keys.start) if keys.stop is None else query.where(
            PageFetch.urlkey >= keys.start, PageFetch.urlkey < keys.stop)
        if from_ms is not None:
            query = query.where(PageFetch.fetched_ms >= from_ms)
        if to_ms is not None:
            query = query.where(PageFetch.fetched_ms <= to_ms)
        return int(session.scalar(query) or 0)
