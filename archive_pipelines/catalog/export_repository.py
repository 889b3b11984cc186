"""The captures an export writes: a scope (sessions, a URL prefix, a time window) read in
pages of ascending id, the order segments were ingested in (no sort over the whole table: a
page is an index range of the primary key)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import PageFetch
from archive_pipelines.catalog.repository_base import Repository, _reads


@dataclass(frozen=True)
class CaptureScope:
    """Which captures: of these sessions (none: every session), under this canonical URL
    prefix of one site (`site` scheme://host[:port]; a prefix equal to the site: all of
    it), fetched within [from_ms, to_ms] (either open)."""

    sessions: tuple[str, ...] = ()
    site: str | None = None
    canonical_prefix: str | None = None
    from_ms: int | None = None
    to_ms: int | None = None


@dataclass(frozen=True)
class ExportCapture:
    """One capture with what its WARC records need (see `models.PageFetch`)."""

    id: int
    kind: str
    url: str
    fetched_ms: int
    status_code: int | None
    final_url: str | None
    content_type: str | None
    body_sha256: str | None
    body_size: int | None
    stored: bool  # the capture references its body's blob
    truncated: bool
    error: str | None
    navigation_id: str | None
    session_id: str
    index_path: str
    record_offset: int
    request_index: int
    depth: int | None


def _scoped(query: Select[Any], scope: CaptureScope) -> Select[Any]:
    if scope.sessions:
        query = query.where(PageFetch.session_id.in_(scope.sessions))
    if scope.site is not None:
        query = query.where(PageFetch.site == scope.site)
        prefix = scope.canonical_prefix
        if prefix is not None and prefix != scope.site:
            query = query.where(func.substr(PageFetch.canonical_url, 1, len(prefix)) == prefix)
    if scope.from_ms is not None:
        query = query.where(PageFetch.fetched_ms >= scope.from_ms)
    if scope.to_ms is not None:
        query = query.where(PageFetch.fetched_ms <= scope.to_ms)
    return query


def _full_body(query: Select[Any]) -> Select[Any]:
    """Captures whose body an export writes (in full the first time, then as revisits): a
    response with a stored, non-empty body. An unchanged capture (a 304 kept with an earlier
    body) is never the first: it is a revisit even when the export holds no other."""
    return _with_body(query).where(PageFetch.status_code != 304)


def _with_body(query: Select[Any]) -> Select[Any]:
    """Responses with a stored, non-empty body (unchanged captures too)."""
    return query.where(PageFetch.status_code.is_not(None), PageFetch.body_blob_id.is_not(None),
                       PageFetch.body_size > 0)


class ExportRepository(Repository):
    """Captures in export order."""

    @_reads
    def id_bounds(self, session: Session, scope: CaptureScope, *, parts: int) -> list[int]:
        """Ids that cut the scope's captures into `parts` runs of about equal length: the
        first id of each run after the first (ascending, possibly fewer)."""
        total = self._on(session).count_in_scope(scope)
        bounds: list[int] = []
        for part in range(1, parts):
            at = total * part // parts
            found = session.scalar(_scoped(select(PageFetch.id), scope)
                                   .order_by(PageFetch.id).offset(at).limit(1))
            if found is not None and (not bounds or found > bounds[-1]):
                bounds.append(int(found))
        return bounds

    @_reads
    def first_with_bodies(self, session: Session, scope: CaptureScope, *, from_id: int,
                          to_id: int | None) -> dict[str, tuple[int, str, int]]:
        """{body sha256: (id, url, fetched_ms)} of the first capture of the scope (by id) with
        each body that captures with ids in [from_id, to_id) write: the response the later
        ones are revisits of."""
        mine = _with_body(_scoped(select(PageFetch.body_sha256), scope)).where(
            PageFetch.id >= from_id)
        if to_id is not None:
            mine = mine.where(PageFetch.id < to_id)
        columns: Select[Any] = select(  # type: ignore[assignment]
            PageFetch.body_sha256, func.min(PageFetch.id).label("first"))
        firsts = (_full_body(_scoped(columns, scope))
                  .where(PageFetch.body_sha256.in_(mine.distinct().scalar_subquery()))
                  .group_by(PageFetch.body_sha256).subquery())
        rows = session.execute(select(firsts.c.body_sha256, PageFetch.id, PageFetch.url,
                                      PageFetch.fetched_ms)
                               .join(PageFetch, PageFetch.id == firsts.c.first))
        return {str(sha): (int(i), str(url), int(ms)) for sha, i, url, ms in rows}

    @_reads
    def count_in_scope(self, session: Session, scope: CaptureScope) -> int:
        """How many captures the scope holds (the export's progress total)."""
        query = _scoped(select(func.count()).select_from(PageFetch), scope)
        return int(session.scalar(query) or 0)

    @_reads
    def page_in_scope(self, session: Session, scope: CaptureScope, *, after_id: int,
                      limit: int, before_id: int | None = None) -> list[ExportCapture]:
        """Up to `limit` captures of the scope with an id above `after_id` (and below
        `before_id`), by id."""
        columns: Select[Any] = select(  # type: ignore[assignment]
            PageFetch.id, PageFetch.kind, PageFetch.url, PageFetch.fetched_ms,
            PageFetch.status_code, PageFetch.final_url, PageFetch.content_type,
            PageFetch.body_sha256, PageFetch.body_size, PageFetch.body_blob_id.is_not(None),
            PageFetch.truncated, PageFetch.error, PageFetch.navigation_id, PageFetch.session_id,
            PageFetch.index_path, PageFetch.record_offset, PageFetch.request_index,
            PageFetch.depth)
        query = _scoped(columns, scope)
        query = query.where(PageFetch.id > after_id)
        if before_id is not None:
            query = query.where(PageFetch.id < before_id)
        query = query.order_by(PageFetch.id).limit(limit)
        return [ExportCapture(*row) for row in session.connection().execute(query)]
