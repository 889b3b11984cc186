"""Blob copies per store: states, upserts, needy blobs, scrub pages, counts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    String,
    Table,
    and_,
    case,
    func,
    literal,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import COPY_STATUSES, Blob, BlobCopy, Store, UtcDateTime
from archive_pipelines.catalog.repository_base import Repository, _reads, _writes
from archive_pipelines.catalog.row_sets import INT, row_set
from archive_pipelines.catalog.statements import chunks, insert_ignore

_CHUNK = 500  # ids per IN (...) list


@dataclass(frozen=True)
class CopyState:
    """One (blob, store) status row, as the planner needs it."""

    status: str
    mtime: datetime | None  # when it became ongoing (from `copies_of`: ongoing rows only)


@dataclass(frozen=True)
class NeedyPage:
    """One director scan: blobs short of the policy, and how far the scan went."""

    blobs: list[tuple[int, str]]  # (blob id, sha256), in id order
    scanned_to: int | None  # last blob id the scan covered; None if nothing was left
    reached_end: bool  # the scan covered every blob id after the cursor


def counted_copies(store_ids: Sequence[int], fresh_since: datetime) -> Any:
    """Correlated `count(*)` of a blob's copies that count toward the policy.

    Present copies count; so do ongoing ones requested after `fresh_since` (their copier is
    presumed alive). One index range of the (blob_id, store_id) primary key per blob.
    """
    return (select(func.count()).select_from(BlobCopy)
            .where(BlobCopy.blob_id == Blob.id, BlobCopy.store_id.in_(list(store_ids)),
                   or_(BlobCopy.status == "present",
                       and_(BlobCopy.status == "ongoing", BlobCopy.mtime > fresh_since)))
            .correlate(Blob).scalar_subquery())


class CopyRepository(Repository):
    """Blob copies on each store: their states, needy blobs and scrub pages."""

    @_reads
    def find_needy_blobs(self, session: Session, *, store_ids: Sequence[int], retention: int,
                         fresh_since: datetime, cursor: int, scan_limit: int,
                         limit: int) -> NeedyPage:
        """Referenced blobs after `cursor` whose counted copies fall short of `retention`.

        Scans at most `scan_limit` blob ids and returns at most `limit` blobs. Garbage
        (ref_count 0) is never replicated.
        """
        # Where the scan window ends: the scan_limit-th id after the cursor (an index-only walk).
        window_end = session.scalar(select(Blob.id).where(Blob.id > cursor).order_by(Blob.id)
                                    .offset(scan_limit - 1).limit(1))
        query = (select(Blob.id, Blob.sha256)
                 .where(Blob.id > cursor, Blob.ref_count > 0,
                        counted_copies(store_ids, fresh_since) < retention)
                 .order_by(Blob.id).limit(limit))
        if window_end is not None:
            query = query.where(Blob.id <= window_end)
        rows = [(int(i), str(s)) for i, s in session.execute(query)]
        if len(rows) >= limit:
            return NeedyPage(rows, rows[-1][0], reached_end=False)
        if window_end is not None:
            return NeedyPage(rows, int(window_end), reached_end=False)
        last = session.scalar(select(func.max(Blob.id)).where(Blob.id > cursor))
        return NeedyPage(rows, None if last is None else int(last), reached_end=True)

    @_reads
    def count_blob_ids(self, session: Session, *, after: int, up_to: int) -> int:
        """How many blob ids lie in (after, up_to] (what a director tick scanned)."""
        return int(session.scalar(select(func.count()).select_from(Blob)
                                  .where(Blob.id > after, Blob.id <= up_to)) or 0)

    @_reads
    def copies_of(self, session: Session, blob_ids: Sequence[int]) -> dict[int, dict[int, CopyState]]:
        """Where each blob has a status row: {blob id: {store id: state}} (absent = no row).

        Only `ongoing` rows carry their mtime (it decides whether they still count): parsing
        a timestamp per present copy was a tenth of a replication batch's time."""
        copies: dict[int, dict[int, CopyState]] = {bid: {} for bid in blob_ids}
        src = row_set(session, [("bid", INT)], [(bid,) for bid in copies])
        ongoing_mtime = case((BlobCopy.status == "ongoing", BlobCopy.mtime), else_=None)
        query = (select(BlobCopy.blob_id, BlobCopy.store_id, BlobCopy.status, ongoing_mtime)
                 .where(BlobCopy.blob_id.in_(select(src.c.bid))))
        for bid, sid, status, mtime in session.connection().execute(query):
            copies[int(bid)][int(sid)] = CopyState(str(status), mtime)
        return copies

    @_writes
    def upsert_copies(self, session: Session, *, store_id: int, blob_ids: Sequence[int], status: str,
                      mtime: datetime, keep_present: bool = False) -> None:
        """Insert or update the (blob, store) rows to `status` at `mtime`.

        With `keep_present`, rows already `present` are left alone (marking a copy ongoing must
        never hide a copy another worker has just finished).
        """
        if status not in COPY_STATUSES:
            raise ValueError(f"unknown copy status {status!r}")
        insert = insert_ignore(session)
        table = cast(Table, BlobCopy.__table__)
        ids = sorted(set(blob_ids))  # concurrent upserts take row locks in one order
        if not ids:
            return
        # One statement per batch, the ids as one parameter (`row_set`): no per-row parameter
        # sets (building and binding those was most of a replication batch's catalog time).
        src = row_set(session, [("bid", INT)], [(bid,) for bid in ids])
        rows = select(src.c.bid, literal(store_id, BigInteger), literal(status, String()),
                      literal(mtime, UtcDateTime())).where(true())  # true(): see row_set
        stmt = insert(table).from_select(["blob_id", "store_id", "status", "mtime"], rows)
        stmt = stmt.on_conflict_do_update(
            index_elements=["blob_id", "store_id"],
            set_={"status": stmt.excluded.status, "mtime": stmt.excluded.mtime},
            where=(table.c.status != "present") if keep_present else None)
        session.execute(stmt)

    @_writes
    def update_copies(self, session: Session, *, store_id: int, blob_ids: Sequence[int], status: str,
                      mtime: datetime, only_if: str, only_if_mtime: datetime | None = None) -> int:
        """Move existing rows from status `only_if` (and mtime, if given) to `status`. Returns rows."""
        changed = 0
        for chunk in chunks(sorted(set(blob_ids)), _CHUNK):
            conditions = [BlobCopy.store_id == store_id, BlobCopy.blob_id.in_(chunk),
                          BlobCopy.status == only_if]
            if only_if_mtime is not None:
                conditions.append(BlobCopy.mtime == only_if_mtime)
            result = session.execute(update(BlobCopy).where(*conditions)
                                     .values(status=status, mtime=mtime)
                                     .execution_options(synchronize_session=False))
            changed += int(result.rowcount or 0)  # type: ignore[attr-defined]
        return changed

    @_writes
    def set_copy_status(self, session: Session, *, blob_id: int, store_id: int, status: str,
                        mtime: datetime) -> None:
        """Record what a store holds of one blob, whatever its row said (verify, gc's revival)."""
        session.execute(update(BlobCopy).where(
            BlobCopy.blob_id == blob_id, BlobCopy.store_id == store_id,
        ).values(status=status, mtime=mtime))

    @_reads
    def status_counts(self, session: Session) -> dict[int, dict[str, int]]:
        """{store id: {status: copies}} over the whole catalog."""
        counts: dict[int, dict[str, int]] = defaultdict(dict)
        for sid, status, n in session.execute(
                select(BlobCopy.store_id, BlobCopy.status, func.count())
                .group_by(BlobCopy.store_id, BlobCopy.status)):
            counts[int(sid)][str(status)] = int(n)
        return dict(counts)

    @_reads
    def count_referenced_blobs(self, session: Session) -> int:
        return int(session.scalar(select(func.count()).select_from(Blob)
                                  .where(Blob.ref_count > 0)) or 0)

    @_reads
    def count_under_replicated(self, session: Session, *, store_ids: Sequence[int], retention: int,
                               fresh_since: datetime | None = None) -> int:
        """Referenced blobs with fewer than `retention` present copies (a full scan: for status).

        With `fresh_since`, ongoing copies requested after it count too (the director's view).
        """
        counted = (BlobCopy.status == "present") if fresh_since is None else or_(
            BlobCopy.status == "present",
            and_(BlobCopy.status == "ongoing", BlobCopy.mtime > fresh_since))
        per_blob = (select(BlobCopy.blob_id, func.count().label("n"))
                    .where(BlobCopy.store_id.in_(list(store_ids)), counted)
                    .group_by(BlobCopy.blob_id).subquery())
        query = (select(func.count()).select_from(Blob)
                 .outerjoin(per_blob, per_blob.c.blob_id == Blob.id)
                 .where(Blob.ref_count > 0, func.coalesce(per_blob.c.n, 0) < retention))
        return int(session.scalar(query) or 0)

    @_reads
    def copies_to_scrub(self, session: Session, *, store_id: int, statuses: Sequence[str],
                        low: str, high: str | None, after: str | None,
                        limit: int) -> list[tuple[int, str, int, str]]:
        """(blob id, sha256, size, status) of a store's copies in sha256 order within [low, high).

        Walks the blob.sha256 index from `after` (exclusive), so a hash-prefix partition is one
        index range, and looks each blob's row up by the (blob_id, store_id) primary key.
        """
        conditions = [Blob.sha256 >= low, BlobCopy.status.in_(list(statuses))]
        if high is not None:
            conditions.append(Blob.sha256 < high)
        if after is not None:
            conditions.append(Blob.sha256 > after)
        query = (select(Blob.id, Blob.sha256, Blob.size, BlobCopy.status)
                 .join(BlobCopy, and_(BlobCopy.blob_id == Blob.id, BlobCopy.store_id == store_id))
                 .where(*conditions).order_by(Blob.sha256).limit(limit))
        return [(int(i), str(s), int(n), str(st)) for i, s, n, st in session.execute(query)]

    @_reads
    def count_copies_in_range(self, session: Session, *, store_id: int, statuses: Sequence[str],
                              low: str, high: str | None) -> int:
        """How many of a store's copies with these statuses have a sha256 in [low, high)."""
        conditions = [BlobCopy.store_id == store_id, BlobCopy.status.in_(list(statuses))]
        if low:
            conditions.append(Blob.sha256 >= low)
        if high is not None:
            conditions.append(Blob.sha256 < high)
        query = (select(func.count()).select_from(BlobCopy)
                 .join(Blob, Blob.id == BlobCopy.blob_id).where(*conditions))
        return int(session.scalar(query) or 0)

    @_writes
    def ensure_store(self, session: Session, *, name: str, kind: str, location: str, codec: str) -> int:
        """The store row's id, created or updated from settings."""
        store = session.scalars(select(Store).where(Store.name == name)).first()
        if store is None:
            store = Store(name=name, kind=kind, location=location, codec=codec)
            session.add(store)
            session.flush()
        elif (store.kind, store.location, store.codec) != (kind, location, codec):
            store.kind, store.location, store.codec = kind, location, codec
        return store.id
