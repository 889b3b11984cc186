"""Crawl requests in the catalog: queued, taken by a crawler (again once its heartbeat is
stale), kept alive with progress, finished with an outcome."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import CRAWL_REQUEST_STATES, CrawlerRow, CrawlRequestRow, utcnow
from archive_pipelines.catalog.repository_base import Repository, _reads, _writes

ACTIVE_STATES = ("queued", "running")
DONE_STATES = tuple(state for state in CRAWL_REQUEST_STATES if state not in ACTIVE_STATES)


@dataclass(frozen=True)
class CrawlRequest:
    """A crawl queued for the crawler, as the catalog holds it."""

    id: int
    crawl_id: str  # `{definition}-{YYYYmmddTHHMMSS}-{id}`: its Redis keys, its frontier folder
    definition_name: str
    definition: dict[str, Any]  # the definition as it was when queued
    state: str
    requested_by: str
    queued_at: datetime
    claimed_by: str | None
    heartbeat_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    attempts: int
    progress: dict[str, Any]
    outcome: dict[str, Any] | None

    @property
    def done(self) -> bool:
        return self.state in DONE_STATES


@dataclass(frozen=True)
class Crawler:
    """A long-running crawler as it last reported itself."""

    worker: str
    started_at: datetime
    seen_at: datetime
    running: int


def _request(row: CrawlRequestRow) -> CrawlRequest:
    return CrawlRequest(
        id=row.id, crawl_id=row.crawl_id or "", definition_name=row.definition_name,
        definition=dict(row.definition), state=row.state, requested_by=row.requested_by,
        queued_at=row.queued_at, claimed_by=row.claimed_by, heartbeat_at=row.heartbeat_at,
        started_at=row.started_at, finished_at=row.finished_at, attempts=row.attempts,
        progress=dict(row.progress or {}), outcome=None if row.outcome is None else dict(row.outcome))


def crawl_id_of(name: str, queued_at: datetime, request_id: int) -> str:
    return f"{name}-{queued_at.strftime('%Y%m%dT%H%M%S')}-{request_id}"


class CrawlRequestRepository(Repository):
    """The crawl request queue."""

    @_writes
    def queue(self, session: Session, *, name: str, definition: dict[str, Any],
              requested_by: str) -> CrawlRequest:
        """A new queued request of definition `name` (its crawl_id set from its row id)."""
        row = CrawlRequestRow(definition_name=name, definition=definition, state="queued",
                              requested_by=requested_by, queued_at=utcnow(), attempts=0,
                              progress={})
        session.add(row)
        session.flush()
        row.crawl_id = crawl_id_of(name, row.queued_at, row.id)
        session.flush()
        return _request(row)

    @_writes
    def claim(self, session: Session, *, worker: str, stale_after_s: float) -> CrawlRequest | None:
        """The oldest running request whose heartbeat is older than `stale_after_s` (its
        crawler is gone: resumed before anything new starts), else the oldest queued one,
        now running under `worker`; None if there is none. Two crawlers never take the same
        one (the UPDATE checks the state again; PostgreSQL skips rows others hold), and a
        crawler never takes over one it runs itself, however late its own heartbeat (a busy
        crawler would otherwise start the crawl a second time beside the first)."""
        now = utcnow()
        stale_before = now - timedelta(seconds=stale_after_s)
        takeable = or_(CrawlRequestRow.state == "queued",
                       (CrawlRequestRow.state == "running")
                       & (CrawlRequestRow.heartbeat_at < stale_before)
                       & or_(CrawlRequestRow.claimed_by.is_(None),
                             CrawlRequestRow.claimed_by != worker))
        for _ in range(5):  # another crawler may take the one we saw: look again
            row = session.scalars(
                select(CrawlRequestRow).where(takeable)
                .order_by(CrawlRequestRow.state.desc(),  # 'running' before 'queued'
                          CrawlRequestRow.queued_at,
                          CrawlRequestRow.id)
                .limit(1).with_for_update(skip_locked=True)).first()
            if row is None:
                return None
            taken = session.execute(
                update(CrawlRequestRow).where(CrawlRequestRow.id == row.id, takeable)
                .values(state="running", claimed_by=worker, heartbeat_at=now,
                        started_at=row.started_at or now, attempts=row.attempts + 1)
                .execution_options(synchronize_session=False))
            if taken.rowcount == 1:  # type: ignore[attr-defined]
                session.refresh(row)
                return _request(row)
        return None

    @_writes
    def heartbeat(self, session: Session, request_id: int, *, worker: str,
                  progress: dict[str, Any]) -> bool:
        """`worker` still runs the request: its heartbeat and progress. False when the
        request is no longer `worker`'s to run (taken by another, finished, cancelled)."""
        done = session.execute(
            update(CrawlRequestRow)
            .where(CrawlRequestRow.id == request_id, CrawlRequestRow.state == "running",
                   CrawlRequestRow.claimed_by == worker)
            .values(heartbeat_at=utcnow(), progress=progress)
            .execution_options(synchronize_session=False))
        return bool(done.rowcount == 1)  # type: ignore[attr-defined]

    @_writes
    def finish(self, session: Session, request_id: int, *, worker: str, state: str,
               outcome: dict[str, Any], progress: dict[str, Any] | None = None) -> bool:
        """The request ended (`finished` or `failed`) with `outcome`; False if it was not
        `worker`'s any more."""
        if state not in DONE_STATES:
            raise ValueError(f"a crawl request ends as one of {', '.join(DONE_STATES)}, not {state!r}")
        values: dict[str, Any] = {"state": state, "outcome": outcome, "finished_at": utcnow()}
        if progress is not None:
            values["progress"] = progress
        done = session.execute(
            update(CrawlRequestRow)
            .where(CrawlRequestRow.id == request_id, CrawlRequestRow.state == "running",
                   CrawlRequestRow.claimed_by == worker)
            .values(**values).execution_options(synchronize_session=False))
        return bool(done.rowcount == 1)  # type: ignore[attr-defined]

    @_writes
    def release(self, session: Session, request_id: int, *, worker: str) -> bool:
        """`worker` stops running the request before its end (it is shutting down): queued
        again, so that the next crawler resumes it at once."""
        done = session.execute(
            update(CrawlRequestRow)
            .where(CrawlRequestRow.id == request_id, CrawlRequestRow.state == "running",
                   CrawlRequestRow.claimed_by == worker)
            .values(state="queued", claimed_by=None)
            .execution_options(synchronize_session=False))
        return bool(done.rowcount == 1)  # type: ignore[attr-defined]

    @_writes
    def cancel(self, session: Session, crawl_id: str) -> CrawlRequest | None:
        """A queued request cancelled (None: no such request; a running or ended one is
        returned unchanged)."""
        row = session.scalars(select(CrawlRequestRow)
                              .where(CrawlRequestRow.crawl_id == crawl_id)).first()
        if row is None:
            return None
        if row.state == "queued":
            row.state = "cancelled"
            row.finished_at = utcnow()
            row.outcome = {"stopped_because": "cancelled before a crawler took it"}
            session.flush()
        return _request(row)

    @_reads
    def get(self, session: Session, crawl_id: str) -> CrawlRequest | None:
        row = session.scalars(select(CrawlRequestRow)
                              .where(CrawlRequestRow.crawl_id == crawl_id)).first()
        return None if row is None else _request(row)

    @_reads
    def listed(self, session: Session, *, name: str | None = None,
               states: Sequence[str] | None = None, limit: int = 100) -> list[CrawlRequest]:
        """Requests, newest first (of definition `name`, in `states`)."""
        query = select(CrawlRequestRow)
        if name is not None:
            query = query.where(CrawlRequestRow.definition_name == name)
        if states is not None:
            query = query.where(CrawlRequestRow.state.in_(list(states)))
        query = query.order_by(CrawlRequestRow.queued_at.desc(), CrawlRequestRow.id.desc())
        return [_request(row) for row in session.scalars(query.limit(limit))]

    @_writes
    def crawler_seen(self, session: Session, worker: str, *, running: int,
                     stopping: bool = False) -> None:
        """Crawler `worker` is alive and runs `running` crawls (`stopping`: it exits now)."""
        now = utcnow()
        row = session.get(CrawlerRow, worker)
        if row is None:
            row = CrawlerRow(worker=worker, started_at=now)
            session.add(row)
        row.seen_at = now
        row.running = running
        row.stopped_at = now if stopping else None
        session.flush()

    @_reads
    def crawlers(self, session: Session, *, seen_after: datetime) -> list[Crawler]:
        """The crawlers that said they were alive after `seen_after` and did not stop since."""
        rows = session.scalars(select(CrawlerRow).where(CrawlerRow.seen_at > seen_after,
                                                        CrawlerRow.stopped_at.is_(None))
                               .order_by(CrawlerRow.worker))
        return [Crawler(row.worker, row.started_at, row.seen_at, row.running) for row in rows]

    @_reads
    def last_crawler_seen(self, session: Session) -> datetime | None:
        """When any crawler last said it was alive (None: none ever did)."""
        return session.scalar(select(CrawlerRow.seen_at).order_by(CrawlerRow.seen_at.desc())
                              .limit(1))
