"""Pure decisions for the lazy-migration and orphan-import sensors (no Dagster here).

`next_migration_batches` pages through snapshots whose fs_version is behind with keyset
queries on the (fs_version, id) index: at most one short range scan per label, whatever the
table size. The cursor is `<label>|<last id>`; past the last label it wraps to "" so
snapshots that failed are retried on the next pass.
"""

from __future__ import annotations

import os
from pathlib import Path

from archive_pipelines.catalog import Catalog
from archive_pipelines.migration.fs_versions import MIGRATABLE_LABELS

_SEPARATOR = "|"


def parse_cursor(cursor: str) -> tuple[int, str]:
    """(label position, last id) from a cursor; a blank or stale cursor starts over."""
    label, sep, last_id = cursor.partition(_SEPARATOR)
    if not sep or label not in MIGRATABLE_LABELS:
        return 0, ""
    return MIGRATABLE_LABELS.index(label), last_id


def next_migration_batches(catalog: Catalog, *, cursor: str, batch_size: int,
                           max_batches: int) -> tuple[list[list[str]], str]:
    """Up to `max_batches` batches of `batch_size` snapshot ids to migrate, and the next cursor."""
    if batch_size < 1 or max_batches < 1:
        raise ValueError("batch_size and max_batches must be at least 1")
    wanted = batch_size * max_batches
    position, after = parse_cursor(cursor)
    ids: list[str] = []
    next_cursor = ""
    with catalog.reading() as tx:
        while position < len(MIGRATABLE_LABELS):
            label = MIGRATABLE_LABELS[position]
            found = tx.adoption.migration_candidates(label, after, wanted - len(ids))
            ids.extend(found)
            if len(ids) >= wanted:
                next_cursor = f"{label}{_SEPARATOR}{found[-1]}"
                break
            position, after = position + 1, ""
    batches = [ids[start:start + batch_size] for start in range(0, len(ids), batch_size)]
    return batches, next_cursor


def orphan_folders_changed(archive_dir: Path, last_mtime_ns: int) -> tuple[bool, int]:
    """Whether archive/ itself changed since `last_mtime_ns` (a folder added, renamed or removed).

    One stat, no scan. Changes inside existing folders do not count; nor can it tell our own
    changes (compatibility links made by migration) from new folders: an import that finds
    nothing new is cheap per folder but still lists archive/.
    """
    try:
        mtime = os.stat(archive_dir).st_mtime_ns
    except FileNotFoundError:
        return last_mtime_ns != 0, 0
    return mtime != last_mtime_ns, mtime
