"""Blob rows: lookups by hash, ref counts, garbage tracking and claims, prefixes, counts."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Exists, and_, case, exists, func, or_, select, union_all, update
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import (
    Blob,
    BlobCopy,
    CrawlSegment,
    CrawlSession,
    PageFetch,
    SnapshotFile,
    Store,
    utcnow,
)
from archive_pipelines.catalog.repository_base import Repository, _reads, _streams, _writes
from archive_pipelines.catalog.row_sets import TEXT, row_set
from archive_pipelines.catalog.statements import insert_ignore
from archive_pipelines.sizes import human_bytes


@dataclass(frozen=True)
class BlobRow:
    id: int
    sha256: str
    size: int
    ref_count: int


def _upper_bound(prefix: str) -> str:
    # Every id and hash is ASCII: this sorts after every string that starts with `prefix`.
    return prefix + "\x7f"


@dataclass(frozen=True)
class BlobCounts:
    """Blob rows in the catalog. A row stays after gc removes its file (so the same bytes
    stored again revive it): `collected` counts those."""

    rows: int
    referenced: int  # ref_count > 0: a snapshot file, capture or segment holds it
    waiting: int  # unreferenced, file on the primary, within gc's grace (or no clock yet)
    due: int  # unreferenced, file on the primary, past the grace: gc removes these
    collected: int  # unreferenced, no file on the primary: removed by gc
    referenced_bytes: int
    unreferenced_bytes: int  # of `waiting` and `due`: bytes gc will free

    @property
    def unreferenced(self) -> int:
        return self.rows - self.referenced

    def line(self) -> str:
        """`3,096 blob rows: 3,093 referenced, 3 unreferenced (3 within gc's grace, ...)`."""
        text = f"{self.rows:,} blob rows: {self.referenced:,} referenced"
        if not self.unreferenced:
            return text + ", 0 unreferenced"
        parts = [f"{self.waiting:,} within gc's grace", f"{self.due:,} past it",
                 f"{self.collected:,} collected by gc"]
        return text + f", {self.unreferenced:,} unreferenced ({', '.join(parts)})"

    def sizes(self) -> str:
        """`referenced 109.8 MiB; unreferenced files 2.0 KiB (gc frees them)`."""
        return (f"referenced {human_bytes(self.referenced_bytes)}; unreferenced files still "
                f"stored {human_bytes(self.unreferenced_bytes)} (gc frees them)")

    def as_dict(self) -> dict[str, int]:
        return {"blob_rows": self.rows, "referenced_blobs": self.referenced,
                "unreferenced_blobs": self.unreferenced,
                "unreferenced_within_grace": self.waiting,
                "unreferenced_past_grace": self.due, "unreferenced_collected": self.collected,
                "referenced_bytes": self.referenced_bytes,
                "unreferenced_bytes": self.unreferenced_bytes}


@dataclass(frozen=True)
class WaitingBlob:
    """An unreferenced blob whose file gc keeps until its grace ends."""

    sha256: str
    size: int
    unreferenced_since: datetime | None  # None: no clock (gc never takes it)


def _on_primary(primary: str) -> Exists:
    primary_id = select(Store.id).where(Store.name == primary).scalar_subquery()
    return exists().where(and_(BlobCopy.blob_id == Blob.id, BlobCopy.store_id == primary_id,
                               BlobCopy.status == "present"))


def _within_grace(cutoff: datetime) -> ColumnElement[bool]:
    return or_(Blob.unreferenced_since.is_(None), Blob.unreferenced_since >= cutoff)


def grace_cutoff(grace_hours: float) -> datetime:
    """When gc's grace of `grace_hours` began for a blob unreferenced since then."""
    return utcnow() - timedelta(hours=grace_hours)


class BlobRepository(Repository):
    """Blobs, their ref counts, gc's tracking and claims, hash prefixes and counts."""

    @_reads
    def blobs_by_sha256(self, session: Session, hashes: Sequence[str]) -> dict[str, BlobRow]:
        src = row_set(session, [("sha", TEXT)], [(h,) for h in dict.fromkeys(hashes)])
        query = (select(Blob.id, Blob.sha256, Blob.size, Blob.ref_count)
                 .where(Blob.sha256.in_(select(src.c.sha))))
        # Core rows: no ORM loading machinery per row.
        return {sha: BlobRow(int(bid), str(sha), int(size), int(refs))
                for bid, sha, size, refs in session.connection().execute(query)}

    @_reads
    def known_hashes(self, session: Session, hashes: Sequence[str]) -> set[str]:
        """Which of these hashes have a blob row (one bounded `IN` list: a folder's files)."""
        return set(session.scalars(select(Blob.sha256).where(Blob.sha256.in_(list(hashes)))))

    @_reads
    def hashes_in_range(self, session: Session, low: str, high: str | None) -> set[str]:
        """The hash of every blob row in [low, high) (`blobstore.prefixes.prefix_range`): one
        range of the sha256 index."""
        query = select(Blob.sha256).where(Blob.sha256 >= low)
        if high is not None:
            query = query.where(Blob.sha256 < high)
        return set(session.scalars(query))

    @_reads
    def referenced_hashes(self, session: Session, *, low: str, high: str | None, after: str,
                          limit: int) -> list[str]:
        """Up to `limit` hashes of referenced blobs in [low, high) after `after`, in order."""
        query = select(Blob.sha256).where(Blob.ref_count > 0, Blob.sha256 >= low,
                                          Blob.sha256 > after)
        if high is not None:
            query = query.where(Blob.sha256 < high)
        return list(session.scalars(query.order_by(Blob.sha256).limit(limit)))

    @_reads
    def blob_page(self, session: Session, *, after: int, limit: int) -> list[BlobRow]:
        """Up to `limit` blobs with an id above `after`, in id order (keyset pagination)."""
        rows = session.execute(select(Blob.id, Blob.sha256, Blob.size, Blob.ref_count)
                               .where(Blob.id > after).order_by(Blob.id).limit(limit)).all()
        return [BlobRow(int(i), str(sha), int(size), int(refs)) for i, sha, size, refs in rows]

    @_reads
    def count_unreferenced(self, session: Session) -> int:
        """Blobs with ref_count 0 (gc's to collect once past the grace)."""
        return int(session.scalar(
            select(func.count()).select_from(Blob).where(Blob.ref_count == 0)) or 0)

    @_reads
    def ref_count(self, session: Session, blob_id: int) -> int | None:
        """The blob's stored ref_count (None: no such blob)."""
        return session.scalar(select(Blob.ref_count).where(Blob.id == blob_id))

    @_writes
    def set_ref_count(self, session: Session, blob_id: int, references: int, now: datetime) -> None:
        """Overwrite a drifted ref_count with the counted `references` (gc's clock starts `now`
        when that is 0)."""
        session.execute(update(Blob).where(Blob.id == blob_id).values(
            ref_count=references, unreferenced_since=(now if references == 0 else None)))

    @_reads
    def unreferenced_page(self, session: Session, *, store_id: int, cutoff: datetime, after: int,
                          limit: int) -> list[tuple[int, str]]:
        """(blob id, sha256) of up to `limit` blobs after `after` (id order) with ref_count 0
        since before `cutoff` and present on the store."""
        present = exists().where(and_(BlobCopy.blob_id == Blob.id,
                                      BlobCopy.store_id == store_id,
                                      BlobCopy.status == "present"))
        rows = session.execute(
            select(Blob.id, Blob.sha256)
            .where(Blob.id > after, Blob.ref_count == 0,
                   Blob.unreferenced_since < cutoff, present)
            .order_by(Blob.id).limit(limit)).all()
        return [(int(blob_id), str(sha)) for blob_id, sha in rows]

    @_writes
    def track_blob(self, session: Session, *, sha256: str, size: int, since: datetime,
                   store_id: int) -> int | None:
        """A row for a blob file the catalog does not know: ref_count 0 since `since`, present
        on the store. Its id, or None when a row exists already (an ingest recorded the file)."""
        blob_id = session.scalar(
            insert_ignore(session)(Blob).values(sha256=sha256, size=size, ref_count=0,
                                        created_at=utcnow(), unreferenced_since=since)
            .on_conflict_do_nothing(index_elements=["sha256"]).returning(Blob.id))
        if blob_id is None:
            return None
        session.add(BlobCopy(blob_id=blob_id, store_id=store_id, status="present",
                             mtime=utcnow()))
        return int(blob_id)

    @_writes
    def claim_unreferenced(self, session: Session, *, blob_id: int, store_id: int) -> bool:
        """Claim an unreferenced blob for removal: lock its row, and mark its copy on the store
        `missing`. False (nothing changed) when it is referenced or not present there.

        The row lock makes an ingest adding a reference wait for this claim (it then sees the
        copy `missing` and rewrites the file), or this claim wait for the ingest (and see
        ref_count > 0). On SQLite write transactions are serialized anyway.
        """
        unreferenced = session.scalar(select(Blob.id).where(
            Blob.id == blob_id, Blob.ref_count == 0).with_for_update())
        if unreferenced is None:
            return False
        result = session.execute(
            update(BlobCopy).where(
                BlobCopy.blob_id == blob_id, BlobCopy.store_id == store_id,
                BlobCopy.status == "present",
            ).values(status="missing", mtime=utcnow())
            .execution_options(synchronize_session=False))
        return bool(int(getattr(result, "rowcount", 0)))

    @_reads
    def body_hashes_with_prefix(self, session: Session, prefix: str, *, limit: int) -> list[str]:
        """Up to `limit` distinct capture body sha256s starting with `prefix`, in order (a range
        on the body index)."""
        rows = session.scalars(
            select(PageFetch.body_sha256).distinct()
            .where(PageFetch.body_sha256 >= prefix, PageFetch.body_sha256 < _upper_bound(prefix))
            .order_by(PageFetch.body_sha256).limit(limit))
        return [str(sha) for sha in rows]

    @_reads
    def session_ids_with_prefix(self, session: Session, prefix: str, *, limit: int) -> list[str]:
        """Up to `limit` crawl session ids starting with `prefix`, in order."""
        rows = session.scalars(
            select(CrawlSession.id)
            .where(CrawlSession.id >= prefix, CrawlSession.id < _upper_bound(prefix))
            .order_by(CrawlSession.id).limit(limit))
        return [str(sid) for sid in rows]

    @_reads
    def count_blobs(self, session: Session, *, primary: str, cutoff: datetime) -> BlobCounts:
        """The counts, with gc's grace ending at `cutoff` (unreferenced since before it: past)
        and `primary` the primary store's name."""
        on_primary = _on_primary(primary)
        unreferenced = Blob.ref_count == 0
        past = and_(unreferenced, on_primary, Blob.unreferenced_since < cutoff)
        waiting = and_(unreferenced, on_primary, _within_grace(cutoff))

        def number(condition: ColumnElement[bool]) -> ColumnElement[int]:
            return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)

        def size(condition: ColumnElement[bool]) -> ColumnElement[int]:
            return func.coalesce(func.sum(case((condition, Blob.size), else_=0)), 0)

        row = session.execute(select(
            func.count(), number(Blob.ref_count > 0), number(waiting), number(past),
            size(Blob.ref_count > 0), size(and_(unreferenced, on_primary)),
        ).select_from(Blob)).one()
        rows, referenced, within, due, referenced_bytes, unreferenced_bytes = (int(v or 0) for v in row)
        return BlobCounts(rows=rows, referenced=referenced, waiting=within, due=due,
                          collected=rows - referenced - within - due,
                          referenced_bytes=referenced_bytes, unreferenced_bytes=unreferenced_bytes)

    @_reads
    def waiting_blobs(self, session: Session, *, primary: str, cutoff: datetime, limit: int | None
                      ) -> list[WaitingBlob]:
        """Unreferenced blobs on the primary within gc's grace (the `waiting` of `count_blobs`),
        those whose grace ends first first; `limit` of them (None: all)."""
        query = (select(Blob.sha256, Blob.size, Blob.unreferenced_since)
                 .where(Blob.ref_count == 0, _on_primary(primary), _within_grace(cutoff))
                 .order_by(Blob.unreferenced_since, Blob.id).limit(limit))
        return [WaitingBlob(str(sha), int(size), since) for sha, size, since in session.execute(query)]

    @_reads
    def counts(self, session: Session, *, primary: str, grace_hours: float) -> BlobCounts:
        """`count_blobs` now (gc's grace of `grace_hours` ends now)."""
        return self._on(session).count_blobs(primary=primary, cutoff=grace_cutoff(grace_hours))

    @_streams
    def count_references(self, session: Session) -> Iterator[tuple[int, str, int, int]]:
        """(blob id, sha256, stored ref_count, counted references) where they differ. A blob's
        references: the snapshot files, the captures whose body it is, the segment files (until
        compacted) and the compacted session files with their indexes."""
        references = union_all(
            select(SnapshotFile.blob_id.label("blob_id")),
            select(PageFetch.body_blob_id.label("blob_id")).where(PageFetch.body_blob_id.is_not(None)),
            select(CrawlSegment.blob_id.label("blob_id")).where(CrawlSegment.blob_id.is_not(None)),
            select(CrawlSession.compacted_blob_id.label("blob_id"))
            .where(CrawlSession.compacted_blob_id.is_not(None)),
            select(CrawlSession.index_blob_id.label("blob_id"))
            .where(CrawlSession.index_blob_id.is_not(None)),
        ).subquery()
        counted = (select(references.c.blob_id, func.count().label("n"))
                   .group_by(references.c.blob_id).subquery())
        actual = func.coalesce(counted.c.n, 0)
        query = (select(Blob.id, Blob.sha256, Blob.ref_count, actual)
                 .outerjoin(counted, counted.c.blob_id == Blob.id)
                 .where(Blob.ref_count != actual))
        for row in session.execute(query):
            yield int(row[0]), str(row[1]), int(row[2]), int(row[3])
