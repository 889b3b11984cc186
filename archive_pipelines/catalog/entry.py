"""The catalog's one entry: `Catalog`, built from one engine, and its repositories.

`catalog.blobs.ref_count(...)` runs in a transaction of its own; several calls that must
commit together run in one: `with catalog.transaction() as tx: tx.blobs...; tx.copies...`.
`catalog.reading()` is the read-only form (a plain BEGIN on SQLite: it never blocks writers).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from archive_pipelines.catalog.adoption_repository import AdoptionRepository
from archive_pipelines.catalog.blob_repository import BlobRepository
from archive_pipelines.catalog.capture_repository import CaptureRepository
from archive_pipelines.catalog.copy_repository import CopyRepository
from archive_pipelines.catalog.crawl_request_repository import CrawlRequestRepository
from archive_pipelines.catalog.day_repository import DayRepository
from archive_pipelines.catalog.engine import make_engine, reader, shared_engine
from archive_pipelines.catalog.errors import clear_catalog_errors
from archive_pipelines.catalog.export_repository import ExportRepository
from archive_pipelines.catalog.file_repository import FileRepository
from archive_pipelines.catalog.import_repository import ImportRepository
from archive_pipelines.catalog.models import (
    ArchiveResult,
    Blob,
    BlobCopy,
    CrawlSegment,
    CrawlSession,
    PageFetch,
    Snapshot,
    SnapshotFile,
    Store,
    Tag,
)
from archive_pipelines.catalog.qa_repository import QaRepository
from archive_pipelines.catalog.replay_repository import ReplayRepository
from archive_pipelines.catalog.repository_base import BoundSession, SessionSource
from archive_pipelines.catalog.snapshot_repository import SnapshotRepository


@dataclass(frozen=True)
class CatalogStatus:
    """Row counts, for `status` and run metadata."""

    snapshots: int
    archive_results: int
    tags: int
    blobs: int
    blob_bytes: int
    snapshot_files: int
    referenced_bytes: int
    stores: int
    blob_copies: int
    crawl_sessions: int
    crawl_segments: int
    page_fetches: int  # captures


class Repositories:
    """One repository per concept, all over the same source of sessions."""

    def __init__(self, sessions: SessionSource) -> None:
        self.snapshots = SnapshotRepository(sessions)
        self.blobs = BlobRepository(sessions)
        self.files = FileRepository(sessions)
        self.copies = CopyRepository(sessions)
        self.captures = CaptureRepository(sessions)
        self.adoption = AdoptionRepository(sessions)
        self.days = DayRepository(sessions)
        self.exports = ExportRepository(sessions)
        self.imports = ImportRepository(sessions)
        self.replay = ReplayRepository(sessions)
        self.crawl_requests = CrawlRequestRepository(sessions)
        self.qa = QaRepository(sessions)


class CatalogTransaction(Repositories):
    """The repositories bound to one open transaction: every call runs in it. `session` is
    that transaction's ORM session (for tests' ORM-level assertions)."""

    def __init__(self, session: Session) -> None:
        super().__init__(BoundSession(session))
        self.session = session


class Catalog(Repositories):
    """The catalog: its repositories (each call a transaction of its own), transactions
    that span several calls, and catalog-wide counts."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._read_sessions = sessionmaker(reader(engine), expire_on_commit=False)
        super().__init__(self)

    @classmethod
    def open(cls, url: str, *, busy_timeout_ms: int = 30_000, shared: bool = False) -> Catalog:
        """The catalog at `url`: on the process's shared engine (`shared`: the Dagster
        resources and the CLI), or on an engine of its own (scripts, tests)."""
        if shared:
            return cls(shared_engine(url, busy_timeout_ms=busy_timeout_ms))
        return cls(make_engine(url, busy_timeout_ms=busy_timeout_ms))

    @contextmanager
    def transaction(self) -> Iterator[CatalogTransaction]:
        """One write transaction for several calls: committed on success, rolled back on
        error."""
        with self.session() as session:
            yield CatalogTransaction(session)

    @contextmanager
    def reading(self) -> Iterator[CatalogTransaction]:
        """One read-only transaction for several calls (never blocks writers on SQLite)."""
        with self.read_session() as session:
            yield CatalogTransaction(session)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A raw write session (the repositories' own; tests' ORM-level assertions)."""
        with clear_catalog_errors(), self._sessions() as session, session.begin():
            yield session

    @contextmanager
    def read_session(self) -> Iterator[Session]:
        """A raw read-only session (a plain BEGIN on SQLite, so writers are not blocked)."""
        with clear_catalog_errors(), self._read_sessions() as session, session.begin():
            yield session

    def status(self) -> CatalogStatus:
        """Row counts of every table that matters to `status`."""
        with self.read_session() as session:
            def count(model: type) -> int:
                return int(session.scalar(select(func.count()).select_from(model)) or 0)

            blob_bytes = session.scalar(select(func.coalesce(func.sum(Blob.size), 0))) or 0
            # Bytes of the blobs something references (snapshot files, captures, segments).
            referenced = session.scalar(
                select(func.coalesce(func.sum(Blob.size), 0)).where(Blob.ref_count > 0)
            ) or 0
            return CatalogStatus(
                snapshots=count(Snapshot),
                archive_results=count(ArchiveResult),
                tags=count(Tag),
                blobs=count(Blob),
                blob_bytes=int(blob_bytes),
                snapshot_files=count(SnapshotFile),
                referenced_bytes=int(referenced),
                stores=count(Store),
                blob_copies=count(BlobCopy),
                crawl_sessions=count(CrawlSession),
                crawl_segments=count(CrawlSegment),
                page_fetches=count(PageFetch),
            )

    def upgrade(self) -> tuple[str | None, str]:
        """Bring the schema to head (Alembic). Returns (revision before, revision after)."""
        from archive_pipelines.catalog.migrate import upgrade_catalog

        return upgrade_catalog(self.engine)

    def schema_revision(self) -> str | None:
        """The schema revision recorded in the catalog (None: no schema yet), read without
        importing Alembic."""
        from archive_pipelines.catalog.schema_revision import current_revision

        return current_revision(self.engine)

    def close(self) -> None:
        """Close the engine's pooled connections (the catalog stays usable)."""
        self.engine.dispose()
