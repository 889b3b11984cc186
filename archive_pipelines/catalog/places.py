"""Snapshot places: the catalog fields that view paths are made of (`storage.snapshot_places` makes
them the views' `SnapshotPlace`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from archive_pipelines.catalog.days import snapshots_created_between
from archive_pipelines.catalog.models import Blob, Snapshot, SnapshotEntry, SnapshotFile


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


def place_rows(session: Session, snapshot_ids: Iterable[str]) -> dict[str, PlaceRow]:
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


def iter_place_pages(session: Session, created_between: tuple[datetime, datetime] | None = None,
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


SnapshotFiles = list[tuple[str, str, str]]  # (extractor, relative_path, sha256)
# (relative_path, target) of the symlinks kept in the views; target None: an empty folder.
SnapshotEntries = list[tuple[str, str | None]]


def iter_snapshot_contents(session: Session,
                           created_between: tuple[datetime, datetime] | None = None,
                           ) -> Iterator[tuple[PlaceRow, SnapshotFiles, SnapshotEntries]]:
    """(place, files, entries) per snapshot (optionally per snapshot created in [start,
    end)) that has files or entries the views keep (empty folders, symlinks pointing inside
    their snapshot folder); two queries per page."""
    for page in iter_place_pages(session, created_between, batch=500):
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
