"""Snapshot files: stores, recording files with exact ref counts, releasing them, places."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import (
    Table,
    and_,
    bindparam,
    delete,
    func,
    insert,
    literal,
    select,
    true,
    update,
)
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import (
    Blob,
    Snapshot,
    SnapshotEntry,
    SnapshotFile,
    UtcDateTime,
    utcnow,
)
from archive_pipelines.catalog.ref_counts import (
    ApplyReport,
    apply_ref_deltas,
    get_or_create_blobs,
    mark_primary_present,
    table_of,
)
from archive_pipelines.catalog.repository_base import Repository, _reads, _streams, _writes
from archive_pipelines.catalog.row_sets import INT, TEXT, row_set
from archive_pipelines.catalog.statements import chunks, snapshots_created_between


class FileEntry(NamedTuple):
    """One file to record: (snapshot, relative_path) -> content, and the extractor that
    wrote it. (A tuple: an ingest makes one per file, and a frozen dataclass's __init__
    cost three times as much.)"""

    snapshot_id: str
    extractor: str
    relative_path: str
    sha256: str
    size: int
    mime_type: str


def _existing_rows(session: Session, entries: Sequence[FileEntry]
                   ) -> dict[tuple[str, str], tuple[int, int]]:
    keys = list({(e.snapshot_id, e.relative_path) for e in entries})
    src = row_set(session, [("sid", TEXT), ("rel", TEXT)], keys)
    query = (select(SnapshotFile.snapshot_id, SnapshotFile.relative_path, SnapshotFile.id,
                    SnapshotFile.blob_id)
             .join(src, and_(SnapshotFile.snapshot_id == src.c.sid,
                             SnapshotFile.relative_path == src.c.rel)))
    return {(sid, rel): (row_id, blob_id) for sid, rel, row_id, blob_id in session.execute(query)}





class PlaceRow(NamedTuple):
    """A snapshot's url, timestamp, creation and id, and whether it owns its timestamp."""

    snapshot_id: str
    url: str
    timestamp: str
    created_at: datetime
    created_by: str
    # by_timestamp/<timestamp> belongs to the oldest snapshot with that timestamp.
    owns_timestamp: bool = True


def _owner_of_timestamp():  # type: ignore[no-untyped-def]
    """Subquery: per timestamp, the id of its oldest snapshot (owner of by_timestamp/<ts>)."""
    ranked = select(
        Snapshot.timestamp,
        Snapshot.id,
        func.row_number().over(partition_by=Snapshot.timestamp,
                               order_by=(Snapshot.created_at, Snapshot.id)).label("rank"),
    ).subquery()
    return select(ranked.c.timestamp, ranked.c.id).where(ranked.c.rank == 1).subquery()


def _place(row: tuple[str, str, str, datetime, str]) -> PlaceRow:
    sid, url, ts, created_at, created_by = row
    return PlaceRow(snapshot_id=sid, url=url, timestamp=ts, created_at=created_at,
                    created_by=created_by)


SnapshotFiles = list[tuple[str, str, str]]  # (extractor, relative_path, sha256)


# (relative_path, target) of the symlinks kept in the views; target None: an empty folder.
SnapshotEntries = list[tuple[str, str | None]]


class FileRepository(Repository):
    """Snapshot files and the blobs they reference: apply, release, places."""

    @_writes
    def apply_files(self, session: Session, entries: Sequence[FileEntry], *, primary_store_id: int,
                    now: datetime | None = None, replace: bool = True) -> ApplyReport:
        """Record a batch of files in one transaction with exact ref counts.

        Re-recording the same content at the same path is a no-op; other content at that path
        moves the reference, or with `replace=False` (adoption: the recorded bytes are an
        original's) is left as it is and listed in `conflicts`. New blobs enter as present on
        the primary store.
        """
        now = now or utcnow()
        report = ApplyReport(files=len(entries))
        if not entries:
            return report
        blob_ids = get_or_create_blobs(session, entries, now, report)
        existing = _existing_rows(session, entries)
        deltas: dict[int, int] = defaultdict(int)
        inserts: list[tuple[str, int, str, str]] = []
        inserted: dict[tuple[str, str], int] = {}  # paths new in this batch: their index in inserts
        moves = []
        stored_once: set[str] = set()  # new blobs: their first reference is not a dedup
        for entry in entries:
            blob_id = blob_ids[entry.sha256]
            key = (entry.snapshot_id, entry.relative_path)
            current = existing.get(key)
            if current is None:
                inserted[key] = len(inserts)
                inserts.append((entry.snapshot_id, blob_id, entry.extractor, entry.relative_path))
                existing[key] = (-1, blob_id)  # a path repeated within the batch counts once
                deltas[blob_id] += 1
                report.added += 1
            elif current[1] == blob_id:
                report.unchanged += 1
                continue
            elif not replace:
                report.conflicts.append((*key, entry.sha256))
                continue
            else:
                if key in inserted:  # new in this batch: the row to insert changes, not a row
                    inserts[inserted[key]] = (entry.snapshot_id, blob_id, entry.extractor,
                                              entry.relative_path)
                else:
                    moves.append({"row_id": current[0], "new_blob": blob_id})
                deltas[current[1]] -= 1
                deltas[blob_id] += 1
                existing[key] = (current[0], blob_id)
                report.replaced += 1
            if entry.sha256 in report.new_blob_hashes and entry.sha256 not in stored_once:
                stored_once.add(entry.sha256)
            else:
                report.deduplicated += 1
                report.bytes_saved += entry.size
        if inserts:
            src = row_set(session, [("sid", TEXT), ("bid", INT), ("ext", TEXT), ("rel", TEXT)],
                          inserts)
            session.execute(insert(table_of(SnapshotFile)).from_select(
                ["snapshot_id", "blob_id", "extractor", "relative_path", "created_at"],
                select(src.c.sid, src.c.bid, src.c.ext, src.c.rel, literal(now, UtcDateTime()))
                .where(true())))
        if moves:
            files = SnapshotFile.__table__
            assert isinstance(files, Table)
            session.execute(
                update(files).where(files.c.id == bindparam("row_id"))
                .values(blob_id=bindparam("new_blob")),
                moves,
            )
        apply_ref_deltas(session, deltas, now)
        mark_primary_present(session, entries, blob_ids, store_id=primary_store_id, now=now,
                             report=report)
        return report

    @_writes
    def release_files(self, session: Session, rows: Iterable[tuple[int, int]],
                      now: datetime | None = None) -> int:
        """Delete snapshot_file rows (row id, blob id) and release their references."""
        rows = list(rows)
        if not rows:
            return 0
        deltas: dict[int, int] = defaultdict(int)
        for _row_id, blob_id in rows:
            deltas[blob_id] -= 1
        for chunk in chunks([r for r, _ in rows]):
            session.execute(delete(SnapshotFile).where(SnapshotFile.id.in_(chunk)))
        apply_ref_deltas(session, deltas, now or utcnow())
        return len(rows)

    @_reads
    def snapshot_file_rows(self, session: Session, snapshot_id: str, extractor: str | None = None,
                           relative_path: str | None = None) -> list[tuple[int, int, str, str, str]]:
        """(row id, blob id, extractor, relative_path, sha256) of a snapshot's files."""
        query = (select(SnapshotFile.id, SnapshotFile.blob_id, SnapshotFile.extractor,
                        SnapshotFile.relative_path, Blob.sha256)
                 .join(Blob, Blob.id == SnapshotFile.blob_id)
                 .where(SnapshotFile.snapshot_id == snapshot_id))
        if extractor is not None:
            query = query.where(SnapshotFile.extractor == extractor)
        if relative_path is not None:
            query = query.where(SnapshotFile.relative_path == relative_path)
        return [tuple(r) for r in session.execute(query)]  # type: ignore[misc]

    @_reads
    def place_rows(self, session: Session, snapshot_ids: Iterable[str]) -> dict[str, PlaceRow]:
        """Places of these snapshots, with by_timestamp ownership resolved."""
        ids = list(set(snapshot_ids))
        places: dict[str, PlaceRow] = {}
        for start in range(0, len(ids), 400):
            chunk = ids[start:start + 400]
            rows = session.execute(select(Snapshot.id, Snapshot.url, Snapshot.timestamp,
                                          Snapshot.created_at, Snapshot.created_by)
                                   .where(Snapshot.id.in_(chunk)))
            for row in rows:
                places[row[0]] = _place(tuple(row))  # type: ignore[arg-type]
        timestamps = {p.timestamp for p in places.values()}
        owners: dict[str, str] = {}
        ts_list = list(timestamps)
        for start in range(0, len(ts_list), 400):
            chunk = ts_list[start:start + 400]
            query = (select(Snapshot.timestamp, Snapshot.id)
                     .where(Snapshot.timestamp.in_(chunk))
                     .order_by(Snapshot.timestamp, Snapshot.created_at.desc(), Snapshot.id.desc()))
            for ts, sid in session.execute(query):
                owners[ts] = sid  # the last row per timestamp is the oldest
        for sid, place in places.items():
            if owners.get(place.timestamp) != sid:
                places[sid] = place._replace(owns_timestamp=False)
        return places

    @_streams
    def iter_place_pages(self, session: Session, created_between: tuple[datetime, datetime] | None = None,
                         batch: int = 1000) -> Iterator[list[PlaceRow]]:
        """Pages of snapshot places (optionally of those created in [start, end)),
        keyset-paginated by id, ownership resolved in one join."""
        query = None if created_between is None else snapshots_created_between(*created_between)
        owners = _owner_of_timestamp()
        last = ""
        while True:
            base = (select(Snapshot.id, Snapshot.url, Snapshot.timestamp, Snapshot.created_at,
                           Snapshot.created_by, owners.c.id)
                    .outerjoin(owners, owners.c.timestamp == Snapshot.timestamp)
                    .where(Snapshot.id > last).order_by(Snapshot.id).limit(batch))
            if query is not None:
                base = base.where(Snapshot.id.in_(query))
            rows = session.execute(base).all()
            if not rows:
                return
            page = []
            for row in rows:
                place = _place(tuple(row[:5]))
                if row[5] != row[0]:
                    place = place._replace(owns_timestamp=False)
                page.append(place)
            yield page
            last = rows[-1][0]

    @_streams
    def iter_snapshot_contents(self, session: Session,
                               created_between: tuple[datetime, datetime] | None = None,
                               ) -> Iterator[tuple[PlaceRow, SnapshotFiles, SnapshotEntries]]:
        """(place, files, entries) per snapshot (optionally per snapshot created in [start,
        end)) that has files or entries the views keep (empty folders, symlinks pointing inside
        their snapshot folder); two queries per page."""
        for page in self._on(session).iter_place_pages(created_between, batch=500):
            by_id: dict[str, SnapshotFiles] = {p.snapshot_id: [] for p in page}
            links: dict[str, SnapshotEntries] = {p.snapshot_id: [] for p in page}
            rows = session.execute(
                select(SnapshotFile.snapshot_id, SnapshotFile.extractor,
                       SnapshotFile.relative_path, Blob.sha256)
                .join(Blob, Blob.id == SnapshotFile.blob_id)
                .where(SnapshotFile.snapshot_id.in_(list(by_id))))
            for sid, extractor, rel, sha in rows:
                by_id[sid].append((extractor, rel, sha))
            for sid, rel, kind, target in session.execute(
                    select(SnapshotEntry.snapshot_id, SnapshotEntry.relative_path, SnapshotEntry.kind,
                           SnapshotEntry.target)
                    .where(SnapshotEntry.snapshot_id.in_(list(by_id)), SnapshotEntry.inside)):
                links[sid].append((rel, None if kind == "folder" else target))
            for place in page:
                sid = place.snapshot_id
                if by_id[sid] or links[sid]:
                    yield place, by_id[sid], links[sid]
