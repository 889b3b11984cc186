"""Tags: ids by name (created on demand, safe against concurrent creators) and the links
between snapshots and tags."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import SnapshotTag, Tag
from archive_pipelines.catalog.statements import chunks, insert_ignore


def tag_ids(session: Session, names: Iterable[str]) -> dict[str, int]:
    """Ids of these tags, creating the missing ones (safe against concurrent creators)."""
    wanted = sorted(set(names))
    ids = _tag_ids(session, wanted)
    missing = [name for name in wanted if name not in ids]
    if missing:
        ins = insert_ignore(session)(Tag).on_conflict_do_nothing(index_elements=["name"])
        session.execute(ins, [{"name": name} for name in missing])
        ids.update(_tag_ids(session, missing))
    return ids


def _tag_ids(session: Session, names: Sequence[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for chunk in chunks(names):
        for name, tag_id in session.execute(select(Tag.name, Tag.id).where(Tag.name.in_(chunk))):
            found[name] = tag_id
    return found


def add_tags(session: Session, pairs: Iterable[tuple[str, int]]) -> None:
    """Link (snapshot id, tag id) pairs; existing links are kept as they are."""
    values = [{"snapshot_id": sid, "tag_id": tid} for sid, tid in sorted(set(pairs))]
    if values:
        ins = insert_ignore(session)(SnapshotTag).on_conflict_do_nothing(
            index_elements=["snapshot_id", "tag_id"])
        session.execute(ins, values)


def replace_tags(session: Session, snapshot_id: str, names: Iterable[str]) -> None:
    """Make `names` (trimmed; empty ones dropped) the snapshot's whole set of tags."""
    wanted = sorted({name.strip() for name in names if name and name.strip()})
    session.execute(delete(SnapshotTag).where(SnapshotTag.snapshot_id == snapshot_id))
    ids = tag_ids(session, wanted)
    add_tags(session, [(snapshot_id, ids[name]) for name in wanted])


__all__ = ["add_tags", "replace_tags", "tag_ids"]
