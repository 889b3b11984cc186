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


class ExportRepository(Repository):
    """Captures in export order."""

    @_reads
    def count_in_scope(self, session: Session, scope: CaptureScope) -> int:
        """How many captures the scope holds (the export's progress total)."""
        query = _scoped(select(func.count()).select_from(PageFetch), scope)
        return int(session.scalar(query) or 0)

    @_reads
    def page_in_scope(self, session: Session, scope: CaptureScope, *, after_id: int,
                      limit: int) -> list[ExportCapture]:
        """Up to `limit` captures of the scope with an id above `after_id`, by id."""
        columns: Select[Any] = select(  # type: ignore[assignment]
            PageFetch.id, PageFetch.kind, PageFetch.url, PageFetch.fetched_ms,
            PageFetch.status_code, PageFetch.final_url, PageFetch.content_type,
            PageFetch.body_sha256, PageFetch.body_size, PageFetch.body_blob_id.is_not(None),
            PageFetch.truncated, PageFetch.error, PageFetch.navigation_id, PageFetch.session_id,
            PageFetch.index_path, PageFetch.record_offset, PageFetch.request_index,
            PageFetch.depth)
        query = _scoped(columns, scope)
        query = query.where(PageFetch.id > after_id).order_by(PageFetch.id).limit(limit)
        return [ExportCapture(*row) for row in session.connection().execute(query)]
