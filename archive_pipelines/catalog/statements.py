"""Building blocks of the catalog's bulk statements: bounded `IN (...)` lists and the
dialect's INSERT (for ON CONFLICT clauses on SQLite and PostgreSQL alike)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select, select
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from archive_pipelines.catalog.models import Snapshot

IN_LIST = 400  # bound parameters per IN (...) list
T = TypeVar("T")


def chunks(items: Sequence[T], size: int = IN_LIST) -> Iterator[Sequence[T]]:
    """Consecutive slices of at most `size` items."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def insert_ignore(session: Session) -> Any:
    """The INSERT construct of the session's dialect (both have `on_conflict_do_*`)."""
    if session.get_bind().dialect.name == "postgresql":
        # Imported here: the PostgreSQL dialect takes ~70 ms to import, which SQLite
        # catalogs (every CLI command on one) need not pay.
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert
    return sqlite_insert


def snapshots_created_between(start: datetime, end: datetime) -> Select[Any]:
    """Ids of snapshots created in [start, end) (uses ix_snapshot_created_at)."""
    return select(Snapshot.id).where(Snapshot.created_at >= start, Snapshot.created_at < end)
