"""The one count of blobs that `status`, `verify`, `gc`, `replication-status` and the asset
checks all show: blob rows, split into referenced and unreferenced, the unreferenced ones by
where gc stands with them. Each command says which of these it counts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Exists, and_, case, exists, func, or_, select
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import Blob, BlobCopy, Store, utcnow
from archive_pipelines.catalog.sessions import Transactions
from archive_pipelines.sizes import human_bytes


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


def count_blobs(session: Session, *, primary: str, cutoff: datetime) -> BlobCounts:
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


def waiting_blobs(session: Session, *, primary: str, cutoff: datetime, limit: int | None
                  ) -> list[WaitingBlob]:
    """Unreferenced blobs on the primary within gc's grace (the `waiting` of `count_blobs`),
    those whose grace ends first first; `limit` of them (None: all)."""
    query = (select(Blob.sha256, Blob.size, Blob.unreferenced_since)
             .where(Blob.ref_count == 0, _on_primary(primary), _within_grace(cutoff))
             .order_by(Blob.unreferenced_since, Blob.id).limit(limit))
    return [WaitingBlob(str(sha), int(size), since) for sha, size, since in session.execute(query)]


def grace_cutoff(grace_hours: float) -> datetime:
    """When gc's grace of `grace_hours` began for a blob unreferenced since then."""
    return utcnow() - timedelta(hours=grace_hours)


def blob_counts(catalog: Transactions, *, primary: str, grace_hours: float) -> BlobCounts:
    """`count_blobs` now, in a read transaction of its own."""
    with catalog.read_session() as session:
        return count_blobs(session, primary=primary, cutoff=grace_cutoff(grace_hours))


__all__ = ["BlobCounts", "WaitingBlob", "blob_counts", "count_blobs", "grace_cutoff",
           "waiting_blobs"]
