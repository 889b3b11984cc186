"""Blob rows and reference counts as files and captures record them: get-or-create blobs,
exact ref-count deltas, primary copies marked present. Shared by the file and capture
repositories, inside their write transactions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from sqlalchemy import Table, and_, case, func, literal, select, true, update
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import Blob, BlobCopy, UtcDateTime
from archive_pipelines.catalog.row_sets import INT, TEXT, row_set
from archive_pipelines.catalog.statements import insert_ignore


class BlobEntry(Protocol):
    """What recording a blob needs: its hash, size and MIME type."""

    @property
    def sha256(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def mime_type(self) -> str: ...


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


def _blob_ids(session: Session, hashes: Sequence[str]) -> dict[str, int]:
    src = row_set(session, [("sha", TEXT)], [(h,) for h in hashes])
    query = select(Blob.sha256, Blob.id).where(Blob.sha256.in_(select(src.c.sha)))
    return {sha: blob_id for sha, blob_id in session.execute(query)}


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


def mark_primary_present(session: Session, entries: Sequence[BlobEntry], blob_ids: dict[str, int], *,
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
