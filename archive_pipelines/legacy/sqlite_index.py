"""Read-only access to ArchiveBox's own `index.sqlite3`, whatever release wrote it.

Columns are detected with PRAGMA table_info: snapshot ids are integers or UUIDs, dates are
`added`/`updated` or `bookmarked_at`/`created_at`/`downloaded_at`, tags a text column or
the `core_tag` many-to-many tables, results absent before 0.5. The file is opened with
`mode=ro` and `query_only`, so reading it can never change it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.legacy.archive_result import LegacyResult, is_extractor_name, parse_result, sort_key
from archive_pipelines.legacy.fields import (
    check_url,
    coerce_timestamp,
    id_text,
    parse_datetime,
    shown,
    split_tags,
    unique_sorted,
)

SQLITE_NAME = "index.sqlite3"  # ArchiveBox's main index, at the collection root

SNAPSHOT_TABLE = "core_snapshot"
RESULT_TABLE = "core_archiveresult"
TAG_TABLE = "core_tag"
SNAPSHOT_TAG_TABLE = "core_snapshot_tags"

# Logical field -> candidate columns, first present wins.
_SNAPSHOT_FIELDS: Mapping[str, tuple[str, ...]] = {
    "id": ("id",),
    "url": ("url",),
    "timestamp": ("timestamp",),
    "title": ("title",),
    "tags": ("tags",),
    "bookmarked": ("bookmarked_at", "added"),
    "created": ("created_at", "added", "bookmarked_at"),
    "updated": ("downloaded_at", "updated", "modified_at"),
}
_RESULT_FIELDS: Mapping[str, tuple[str, ...]] = {
    "snapshot_id": ("snapshot_id",),
    "id": ("id",),
    "uuid": ("uuid",),
    "extractor": ("extractor", "plugin"),
    "cmd": ("cmd",),
    "cmd_version": ("cmd_version",),
    "pwd": ("pwd",),
    "output": ("output", "output_str"),
    "status": ("status",),
    "start_ts": ("start_ts",),
    "end_ts": ("end_ts",),
}


class ArchiveBoxIndexError(ArchiveError):
    """index.sqlite3 is missing, not a database, or has no usable core_snapshot table."""


@dataclass(frozen=True)
class ArchiveBoxSnapshot:
    """One core_snapshot row with its tags and results (dates UTC-aware)."""

    snapshot_id: str | None
    url: str
    timestamp: str
    title: str | None
    tags: tuple[str, ...]
    bookmarked: datetime | None
    created: datetime | None
    updated: datetime | None
    results: Mapping[str, tuple[LegacyResult, ...]]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArchiveBoxSchema:
    """Which logical fields this database has, mapped to its column names."""

    snapshot: Mapping[str, str]
    result: Mapping[str, str]
    has_tag_tables: bool


class ArchiveBoxIndex:
    """A read-only reader of one ArchiveBox `index.sqlite3`."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise ArchiveBoxIndexError(f"{path}: no such database file")
        self.path = path
        self.invalid_rows: list[tuple[str, str]] = []  # (row id, reason) of skipped rows
        self._conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            self._conn.execute("PRAGMA query_only = ON")
            self.schema = self._detect()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise ArchiveBoxIndexError(f"{path}: not a readable ArchiveBox index: {exc}") from exc

    def __enter__(self) -> ArchiveBoxIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()

    def count(self) -> int:
        """Rows in core_snapshot (valid or not)."""
        row = self._conn.execute(f'SELECT count(*) FROM "{SNAPSHOT_TABLE}"').fetchone()
        return int(row[0])

    def iter_snapshots(
        self, *, after_timestamp: str | None = None, batch_size: int = 500
    ) -> Iterator[ArchiveBoxSnapshot]:
        """Every valid snapshot in timestamp order, `batch_size` rows in memory at a time.

        Rows with an unusable url or timestamp are skipped and listed in `invalid_rows`
        (reset by each call).
        """
        self.invalid_rows = []
        if after_timestamp is None:
            yield from self._query("", (), batch_size)
        else:
            yield from self._query("WHERE {ts} > ?", (after_timestamp,), batch_size)

    def get_by_timestamp(self, timestamp: str) -> ArchiveBoxSnapshot | None:
        """The snapshot with this exact timestamp, or None."""
        return next(self._query("WHERE {ts} = ?", (timestamp,), 1), None)

    def _detect(self) -> ArchiveBoxSchema:
        listing = self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = {row[0] for row in listing}
        if SNAPSHOT_TABLE not in tables:
            raise ArchiveBoxIndexError(f"{self.path}: no {SNAPSHOT_TABLE} table")
        snapshot = _pick(self._columns(SNAPSHOT_TABLE), _SNAPSHOT_FIELDS)
        if "url" not in snapshot or "timestamp" not in snapshot:
            raise ArchiveBoxIndexError(f"{self.path}: {SNAPSHOT_TABLE} lacks url or timestamp")
        result: dict[str, str] = {}
        if RESULT_TABLE in tables:
            result = _pick(self._columns(RESULT_TABLE), _RESULT_FIELDS)
            if "snapshot_id" not in result or "extractor" not in result or "id" not in snapshot:
                result = {}
        has_tags = (
            "id" in snapshot
            and {TAG_TABLE, SNAPSHOT_TAG_TABLE} <= tables
            and {"id", "name"} <= self._columns(TAG_TABLE)
            and {"snapshot_id", "tag_id"} <= self._columns(SNAPSHOT_TAG_TABLE)
        )
        return ArchiveBoxSchema(snapshot=snapshot, result=result, has_tag_tables=has_tags)

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self._conn.execute(f'PRAGMA table_info("{table}")')}

    def _query(self, where: str, params: Sequence[Any], batch_size: int) -> Iterator[ArchiveBoxSnapshot]:
        fields = self.schema.snapshot
        names = list(fields)
        select = ", ".join(f'"{fields[name]}"' for name in names)
        where = where.format(ts=f'"{fields["timestamp"]}"')
        sql = f'SELECT {select} FROM "{SNAPSHOT_TABLE}" {where} ORDER BY "{fields["timestamp"]}"'
        cursor = self._conn.execute(sql, tuple(params))
        while rows := cursor.fetchmany(batch_size):
            records = [dict(zip(names, row, strict=True)) for row in rows]
            ids = [record["id"] for record in records if record.get("id") is not None]
            tags = self._tags_for(ids)
            results = self._results_for(ids)
            for record in records:
                snapshot = self._hydrate(record, tags, results)
                if snapshot is not None:
                    yield snapshot

    def _tags_for(self, ids: list[Any]) -> dict[Any, list[str]]:
        found: dict[Any, list[str]] = {}
        if not self.schema.has_tag_tables or not ids:
            return found
        sql = (
            f'SELECT st."snapshot_id", t."name" FROM "{SNAPSHOT_TAG_TABLE}" st '
            f'JOIN "{TAG_TABLE}" t ON t."id" = st."tag_id" '
            f'WHERE st."snapshot_id" IN ({", ".join("?" * len(ids))})'
        )
        for snapshot_id, name in self._conn.execute(sql, ids):
            if isinstance(name, str):
                found.setdefault(snapshot_id, []).append(name)
        return found

    def _results_for(self, ids: list[Any]) -> dict[Any, list[tuple[str, Mapping[str, Any]]]]:
        found: dict[Any, list[tuple[str, Mapping[str, Any]]]] = {}
        fields = self.schema.result
        if not fields or not ids:
            return found
        names = list(fields)
        select = ", ".join(f'"{fields[name]}"' for name in names)
        placeholders = ", ".join("?" * len(ids))
        sql = f'SELECT {select} FROM "{RESULT_TABLE}" WHERE "{fields["snapshot_id"]}" IN ({placeholders})'
        for row in self._conn.execute(sql, ids):
            data = dict(zip(names, row, strict=True))
            snapshot_id, extractor = data.pop("snapshot_id"), data.pop("extractor")
            found.setdefault(snapshot_id, []).append((extractor, data))
        return found

    def _hydrate(
        self,
        record: Mapping[str, Any],
        tags: Mapping[Any, list[str]],
        results: Mapping[Any, list[tuple[str, Mapping[str, Any]]]],
    ) -> ArchiveBoxSnapshot | None:
        row_id = record.get("id")
        url, problem = check_url(record["url"])
        timestamp = coerce_timestamp(record["timestamp"])
        if url is None or timestamp is None:
            reason = problem or f"timestamp {shown(record['timestamp'])} is not a timestamp"
            self.invalid_rows.append((str(row_id), reason))
            return None
        warnings: list[str] = []
        parsed: dict[str, list[LegacyResult]] = {}
        for extractor, data in results.get(row_id, []):
            if not is_extractor_name(extractor):
                warnings.append(f"result extractor {shown(extractor)} is not usable; skipped")
                continue
            result = parse_result(data, extractor=extractor, where=extractor, warn=warnings.append)
            if result is not None:
                parsed.setdefault(extractor, []).append(result)
        title = record.get("title")
        return ArchiveBoxSnapshot(
            snapshot_id=id_text(row_id),
            url=url,
            timestamp=timestamp,
            title=(title.strip() or None) if isinstance(title, str) else None,
            tags=unique_sorted([*(split_tags(record.get("tags")) or []), *tags.get(row_id, [])]),
            bookmarked=parse_datetime(record.get("bookmarked")),
            created=parse_datetime(record.get("created")),
            updated=parse_datetime(record.get("updated")),
            results={name: tuple(sorted(items, key=sort_key)) for name, items in parsed.items()},
            warnings=tuple(warnings),
        )


def _pick(columns: set[str], wanted: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    picked: dict[str, str] = {}
    for name, candidates in wanted.items():
        column = next((c for c in candidates if c in columns), None)
        if column is not None:
            picked[name] = column
    return picked
