"""Browser captures and their checks against their replay (`capture_qa`).

A browser capture is a `page` capture whose page load also left a `screenshot` capture (same
session and navigation id). Its expected resources are the page and request captures of that
navigation that got an answer (a status). Checks are kept, one row each; a capture's score is
its newest check's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, func, select
from sqlalchemy.orm import Session, aliased

from archive_pipelines.catalog.models import CaptureQaRow, CrawlSegment, PageFetch, utcnow
from archive_pipelines.catalog.repository_base import Repository, _reads, _writes

MAX_MISSING_LISTED = 50  # URLs kept in `missing`
MAX_MISSING_CHARS = 20_000  # and at most this much JSON (long URLs)
MAX_ERROR_CHARS = 2_000


@dataclass(frozen=True)
class BrowserPage:
    """A page capture the browser made, and what QA holds its replay against."""

    id: int
    url: str
    fetched_ms: int
    session_id: str
    navigation_id: str
    screenshot_sha256: str | None  # None: the screenshot's body was not recorded
    screenshot_stored: bool


@dataclass(frozen=True)
class QaCheck:
    """One check's figures (what `capture_qa` holds)."""

    pixel_score: float | None
    resources_expected: int
    resources_replayed: int
    missing: tuple[str, ...]
    leaks: int
    score: float
    error: str | None = None


@dataclass(frozen=True)
class RecordedCheck:
    """A check as recorded: its page capture, when, and its figures."""

    page_fetch_id: int
    url: str
    fetched_ms: int
    checked_at: datetime
    check: QaCheck


class QaRepository(Repository):
    """Browser captures to check, and their checks."""

    @_reads
    def browser_page(self, session: Session, page_fetch_id: int) -> BrowserPage | None:
        """The browser capture whose page capture is `page_fetch_id` (None: no such one)."""
        row = session.execute(_browser_pages().where(PageFetch.id == page_fetch_id)).first()
        return None if row is None else _page(row)

    @_reads
    def browser_pages_of_url(self, session: Session, url_hash: str) -> list[BrowserPage]:
        """The browser captures of the URL with this canonical hash, oldest first."""
        rows = session.execute(_browser_pages().where(PageFetch.url_hash == url_hash)
                               .order_by(PageFetch.fetched_ms, PageFetch.id))
        return [_page(row) for row in rows]

    @_reads
    def unchecked_browser_pages(self, session: Session, day: str, *,
                                limit: int = 10_000) -> list[int]:
        """Ids of the browser captures in the segments under sessions/<day>/ never checked
        (at most `limit`, oldest first)."""
        checked = select(CaptureQaRow.id).where(CaptureQaRow.page_fetch_id == PageFetch.id)
        return list(session.scalars(
            _browser_pages().with_only_columns(PageFetch.id)
            .join(CrawlSegment, CrawlSegment.id == PageFetch.segment_id)
            .where(CrawlSegment.path.like(f"sessions/{day}/%"), ~checked.exists())
            .order_by(PageFetch.id).limit(limit)))

    @_reads
    def expected_resources(self, session: Session, page: BrowserPage) -> list[tuple[str, int]]:
        """(URL, status) of every request of the page's load that got an answer, its own
        first, in the order the page made them."""
        rows = session.execute(
            select(PageFetch.url, PageFetch.status_code)
            .where(PageFetch.session_id == page.session_id,
                   PageFetch.navigation_id == page.navigation_id,
                   PageFetch.kind.in_(("page", "request")), PageFetch.status_code.is_not(None))
            .order_by(PageFetch.request_index, PageFetch.id))
        return [(url, status) for url, status in rows if status is not None]

    @_writes
    def record(self, session: Session, page_fetch_id: int, check: QaCheck, *,
               checked_at: datetime | None = None) -> int:
        """Record a check of the browser capture `page_fetch_id`; its row id."""
        row = CaptureQaRow(
            page_fetch_id=page_fetch_id, checked_at=checked_at or utcnow(),
            pixel_score=check.pixel_score, resources_expected=check.resources_expected,
            resources_replayed=check.resources_replayed, missing=_missing_json(check.missing),
            leaks=check.leaks, score=check.score,
            error=None if check.error is None else check.error[:MAX_ERROR_CHARS])
        session.add(row)
        session.flush()
        return row.id

    @_reads
    def latest(self, session: Session, page_fetch_ids: Iterable[int]) -> dict[int, RecordedCheck]:
        """The newest check of each of `page_fetch_ids` that has one."""
        ids = sorted(set(page_fetch_ids))
        found: dict[int, RecordedCheck] = {}
        for start in range(0, len(ids), 500):
            found |= {check.page_fetch_id: check
                      for check in _newest(session, CaptureQaRow.page_fetch_id.in_(ids[start:start + 500]))}
        return found

    @_reads
    def below(self, session: Session, threshold: float, *,
              limit: int = 50) -> tuple[int, list[RecordedCheck]]:
        """(how many, the lowest `limit`) browser captures whose newest check scored under
        `threshold`, lowest first."""
        newest = _newest_ids().subquery()
        under = and_(CaptureQaRow.id.in_(select(newest.c.id)), CaptureQaRow.score < threshold)
        count = int(session.scalar(select(func.count()).select_from(CaptureQaRow).where(under)) or 0)
        return count, _newest(session, under, order_by_score=True, limit=limit)


_PageColumns = Select[int, str, int, str, str | None, str | None, bool]


def _browser_pages() -> _PageColumns:
    shot = aliased(PageFetch)
    query: _PageColumns = (select(PageFetch.id, PageFetch.url, PageFetch.fetched_ms, PageFetch.session_id,
                   PageFetch.navigation_id, shot.body_sha256, shot.body_blob_id.is_not(None))
            .join(shot, and_(shot.session_id == PageFetch.session_id,
                             shot.navigation_id == PageFetch.navigation_id,
                             shot.kind == "screenshot"))
            .where(PageFetch.kind == "page", PageFetch.navigation_id.is_not(None)))
    return query


def _page(row: Any) -> BrowserPage:
    page_id, url, fetched_ms, session_id, navigation_id, sha256, stored = row
    return BrowserPage(id=page_id, url=url, fetched_ms=fetched_ms, session_id=session_id,
                       navigation_id=navigation_id, screenshot_sha256=sha256,
                       screenshot_stored=bool(stored))


def _newest_ids() -> Select[Any]:
    """The id of each page's newest check."""
    later = aliased(CaptureQaRow)
    newer = select(later.id).where(
        later.page_fetch_id == CaptureQaRow.page_fetch_id,
        (later.checked_at > CaptureQaRow.checked_at)
        | ((later.checked_at == CaptureQaRow.checked_at) & (later.id > CaptureQaRow.id)))
    return select(CaptureQaRow.id).where(~newer.exists())


def _newest(session: Session, condition: object, *, order_by_score: bool = False,
            limit: int | None = None) -> list[RecordedCheck]:
    query = (select(CaptureQaRow, PageFetch.url, PageFetch.fetched_ms)
             .join(PageFetch, PageFetch.id == CaptureQaRow.page_fetch_id)
             .where(condition, CaptureQaRow.id.in_(_newest_ids())))  # type: ignore[arg-type]
    query = query.order_by(CaptureQaRow.score, CaptureQaRow.id) if order_by_score else query
    if limit is not None:
        query = query.limit(limit)
    return [RecordedCheck(row.page_fetch_id, url, fetched_ms, row.checked_at, QaCheck(
                pixel_score=row.pixel_score, resources_expected=row.resources_expected,
                resources_replayed=row.resources_replayed, missing=tuple(json.loads(row.missing)),
                leaks=row.leaks, score=row.score, error=row.error))
            for row, url, fetched_ms in session.execute(query)]


def _missing_json(missing: Sequence[str]) -> str:
    """At most MAX_MISSING_LISTED URLs, as JSON of at most MAX_MISSING_CHARS."""
    kept: list[str] = []
    for url in missing[:MAX_MISSING_LISTED]:
        if len(json.dumps([*kept, url])) > MAX_MISSING_CHARS:
            break
        kept.append(url)
    return json.dumps(kept)
