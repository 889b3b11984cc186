"""Blob and snapshot-file queries: get-or-create blobs, exact ref counts, batched."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple, Protocol

from sqlalchemy import (
    Connection,
    Table,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import (
    Blob,
    BlobCopy,
    CrawlSegment,
    CrawlSession,
    PageFetch,
    Snapshot,
    SnapshotFile,
    Store,
    UtcDateTime,
    utcnow,
)
from archive_pipelines.catalog.row_sets import INT, TEXT, row_set
from archive_pipelines.catalog.statements import chunks, insert_ignore


class BlobEntry(Protocol):
    """What recording a blob needs: its hash, size and MIME type."""

    @property
    def sha256(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def mime_type(self) -> str: ...


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


@dataclass
class ApplyReport:
    files: int = 0
    unchanged: int = 0
    added: int = 0
    replaced: int = 0
    new_blobs: int = 0
    deduplicated: int = 0
    bytes_saved: int = 0
    # Blobs whose primary copy had been garbage-collected: the caller must rewrite them.
    revived: set[str] = field(default_factory=set)
    # (snapshot_id, relative_path, sha256) of entries not recorded: the path holds other
    # content, left so (replace=False).
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)
    new_blob_hashes: set[str] = field(default_factory=set)


def table_of(model: type) -> Table:
    table = model.__table__  # type: ignore[attr-defined]
    assert isinstance(table, Table)
    return table


def ensure_store(session: Session, *, name: str, kind: str, location: str, codec: str) -> int:
    """The store row's id, created or updated from settings."""
    store = session.scalars(select(Store).where(Store.name == name)).first()
    if store is None:
        store = Store(name=name, kind=kind, location=location, codec=codec)
        session.add(store)
        session.flush()
    elif (store.kind, store.location, store.codec) != (kind, location, codec):
        store.kind, store.location, store.codec = kind, location, codec
    return store.id


def apply_files(session: Session, entries: Sequence[FileEntry], *, primary_store_id: int,
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
    mark_primary_present(session, entries, blob_ids, primary_store_id, now, report)
    return report


def get_or_create_blobs(session: Session, entries: Sequence[BlobEntry], now: datetime,
                       report: ApplyReport) -> dict[str, int]:
    """{sha256: blob id} of the entries' blobs, made (ref_count 0) where missing;
    `report.new_blobs` / `new_blob_hashes` say which this call made."""
    by_hash = {e.sha256: e for e in entries}
    ids = _blob_ids(session, list(by_hash))
    missing = [by_hash[h] for h in by_hash if h not in ids]
    if missing:
        src = row_set(session, [("sha", TEXT), ("size", INT), ("mime", TEXT)],
                      [(e.sha256, e.size, e.mime_type) for e in missing])
        at = literal(now, UtcDateTime())
        ins = insert_ignore(session)(table_of(Blob)).from_select(
            ["sha256", "size", "mime_type", "ref_count", "created_at", "unreferenced_since"],
            select(src.c.sha, src.c.size, src.c.mime, literal(0), at, at).where(true()))
        session.execute(ins.on_conflict_do_nothing(index_elements=["sha256"]))
        created = _blob_ids(session, [e.sha256 for e in missing])
        ids.update(created)
        # Another writer may have won the insert race; those are not ours to count as new.
        report.new_blob_hashes = {e.sha256 for e in missing}
        report.new_blobs = len(report.new_blob_hashes)
    return ids


def _blob_ids(session: Session, hashes: Sequence[str]) -> dict[str, int]:
    src = row_set(session, [("sha", TEXT)], [(h,) for h in hashes])
    query = select(Blob.sha256, Blob.id).where(Blob.sha256.in_(select(src.c.sha)))
    return {sha: blob_id for sha, blob_id in session.execute(query)}


def _existing_rows(session: Session, entries: Sequence[FileEntry]
                   ) -> dict[tuple[str, str], tuple[int, int]]:
    keys = list({(e.snapshot_id, e.relative_path) for e in entries})
    src = row_set(session, [("sid", TEXT), ("rel", TEXT)], keys)
    query = (select(SnapshotFile.snapshot_id, SnapshotFile.relative_path, SnapshotFile.id,
                    SnapshotFile.blob_id)
             .join(src, and_(SnapshotFile.snapshot_id == src.c.sid,
                             SnapshotFile.relative_path == src.c.rel)))
    return {(sid, rel): (row_id, blob_id) for sid, rel, row_id, blob_id in session.execute(query)}


def apply_ref_deltas(session: Session, deltas: dict[int, int], now: datetime) -> None:
    """ref_count += delta per blob; keeps unreferenced_since (gc's clock) in step."""
    changes = sorted((bid, d) for bid, d in deltas.items() if d)  # one lock order
    if not changes:
        return
    blob = table_of(Blob)
    src = row_set(session, [("bid", INT), ("d", INT)], changes)
    new_count = blob.c.ref_count + src.c.d
    session.execute(
        update(blob).where(blob.c.id == src.c.bid).values(
            ref_count=new_count,
            # NULL while referenced; set when the count reaches 0 (kept if already set).
            unreferenced_since=case(
                (new_count == 0, func.coalesce(blob.c.unreferenced_since,
                                               literal(now, UtcDateTime()))),
                else_=None),
        ))


def mark_primary_present(session: Session, entries: Sequence[BlobEntry], blob_ids: dict[str, int],
                         store_id: int, now: datetime, report: ApplyReport) -> None:
    """The entries' blobs are present on the primary store (`report.revived`: those
    recorded otherwise until now)."""
    ids = sorted({blob_ids[e.sha256] for e in entries})
    src = row_set(session, [("bid", INT)], [(bid,) for bid in ids])
    known: dict[int, str] = dict(session.execute(
        select(BlobCopy.blob_id, BlobCopy.status)
        .where(BlobCopy.blob_id.in_(select(src.c.bid)), BlobCopy.store_id == store_id)).all())
    fresh = [(bid,) for bid in ids if bid not in known]
    if fresh:
        new = row_set(session, [("bid", INT)], fresh, name="fresh")
        ins = insert_ignore(session)(table_of(BlobCopy)).from_select(
            ["blob_id", "store_id", "status", "mtime"],
            select(new.c.bid, literal(store_id), literal("present"),
                   literal(now, UtcDateTime())).where(true()))
        session.execute(ins.on_conflict_do_nothing(index_elements=["blob_id", "store_id"]))
    revive = [bid for bid, status in known.items() if status != "present"]
    if revive:
        session.execute(update(BlobCopy).where(
            and_(BlobCopy.store_id == store_id, BlobCopy.blob_id.in_(revive))
        ).values(status="present", mtime=now).execution_options(synchronize_session=False))
        by_id = {v: k for k, v in blob_ids.items()}
        report.revived = {by_id[bid] for bid in revive}


def release_files(session: Session, rows: Iterable[tuple[int, int]],
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


def snapshot_file_rows(session: Session, snapshot_id: str, extractor: str | None = None,
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


def count_references(conn: Connection | Session) -> Iterator[tuple[int, str, int, int]]:
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
    for row in conn.execute(query):
        yield int(row[0]), str(row[1]), int(row[2]), int(row[3])


__all__ = ["ApplyReport", "BlobEntry", "FileEntry", "Snapshot", "apply_files", "apply_ref_deltas",
           "count_references", "ensure_store", "get_or_create_blobs", "mark_primary_present",
           "release_files", "snapshot_file_rows"]
