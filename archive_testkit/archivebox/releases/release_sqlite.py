"""ArchiveBox-style `index.sqlite3` files (one schema variant per release family) for tests."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path

from archive_testkit.archivebox.index_sqlite import write_index_sqlite
from archive_testkit.archivebox.releases.release_documents import SnapshotSpec, result_times

# fs_version -> schema variant: 0.4 (integer ids, tags text, no results), 0.6 (uuid ids,
# added/updated, core_tag m2m, results), 0.8 (uuid ids, abids, bookmarked_at/created_at/...).
SQLITE_VARIANTS: Mapping[str, str] = {
    "0.4": "0.4",
    "0.6": "0.6",
    "0.8": "0.8",
    "0.8.3": "0.8",
    "0.9": "0.8",
}

_SCHEMAS: Mapping[str, str] = {
    "0.4": """
        CREATE TABLE "core_snapshot" (
            "id" integer NOT NULL PRIMARY KEY AUTOINCREMENT,
            "url" varchar(2000) NOT NULL UNIQUE, "timestamp" varchar(32) NOT NULL UNIQUE,
            "title" varchar(128) NULL, "tags" varchar(256) NULL,
            "added" datetime NOT NULL, "updated" datetime NULL);
    """,
    "0.6": """
        CREATE TABLE "core_snapshot" (
            "id" char(32) NOT NULL PRIMARY KEY,
            "url" varchar(2000) NOT NULL UNIQUE, "timestamp" varchar(32) NOT NULL UNIQUE,
            "title" varchar(512) NULL, "added" datetime NOT NULL, "updated" datetime NULL);
        CREATE TABLE "core_tag" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT,
            "name" varchar(100) NOT NULL UNIQUE, "slug" varchar(100) NOT NULL UNIQUE);
        CREATE TABLE "core_snapshot_tags" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT,
            "snapshot_id" char(32) NOT NULL REFERENCES "core_snapshot" ("id"),
            "tag_id" integer NOT NULL REFERENCES "core_tag" ("id"));
        CREATE TABLE "core_archiveresult" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT,
            "uuid" char(32) NULL, "cmd" text NOT NULL, "pwd" varchar(256) NOT NULL,
            "cmd_version" varchar(128) NULL, "output" varchar(1024) NOT NULL,
            "start_ts" datetime NOT NULL, "end_ts" datetime NOT NULL,
            "status" varchar(16) NOT NULL, "extractor" varchar(32) NOT NULL,
            "snapshot_id" char(32) NOT NULL REFERENCES "core_snapshot" ("id"));
        CREATE INDEX "core_archiveresult_snapshot_id" ON "core_archiveresult" ("snapshot_id");
    """,
    "0.8": """
        CREATE TABLE "core_snapshot" (
            "id" char(32) NOT NULL PRIMARY KEY, "abid" varchar(30) NOT NULL UNIQUE,
            "url" varchar(2000) NOT NULL, "timestamp" varchar(32) NOT NULL UNIQUE,
            "title" varchar(512) NULL, "bookmarked_at" datetime NOT NULL,
            "created_at" datetime NOT NULL, "modified_at" datetime NOT NULL,
            "downloaded_at" datetime NULL, "created_by_id" integer NOT NULL);
        CREATE TABLE "core_tag" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT,
            "abid" varchar(30) NOT NULL, "name" varchar(100) NOT NULL UNIQUE,
            "slug" varchar(100) NOT NULL UNIQUE, "created_at" datetime NOT NULL,
            "modified_at" datetime NOT NULL, "created_by_id" integer NOT NULL);
        CREATE TABLE "core_snapshot_tags" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT,
            "snapshot_id" char(32) NOT NULL REFERENCES "core_snapshot" ("id"),
            "tag_id" integer NOT NULL REFERENCES "core_tag" ("id"));
        CREATE TABLE "core_archiveresult" ("id" char(32) NOT NULL PRIMARY KEY,
            "abid" varchar(30) NOT NULL, "snapshot_id" char(32) NOT NULL,
            "extractor" varchar(32) NOT NULL, "cmd" text NULL, "pwd" varchar(256) NULL,
            "cmd_version" varchar(128) NULL, "output" varchar(1024) NULL,
            "start_ts" datetime NULL, "end_ts" datetime NULL, "status" varchar(15) NOT NULL,
            "created_at" datetime NOT NULL, "modified_at" datetime NOT NULL,
            "created_by_id" integer NOT NULL);
        CREATE INDEX "core_archiveresult_snapshot_id" ON "core_archiveresult" ("snapshot_id");
    """,
}


def _django(value: datetime) -> str:
    # Django's SQLite backend stores UTC datetimes as naive text.
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")


def write_archivebox_sqlite(path: Path, snapshots: Sequence[SnapshotSpec], variant: str) -> None:
    """Create `path` as an ArchiveBox `index.sqlite3` of schema `variant` holding `snapshots`."""
    if variant not in _SCHEMAS:
        raise ValueError(f"no index.sqlite3 schema variant {variant!r}")

    def fill(conn: sqlite3.Connection) -> None:
        if variant == "0.4":
            _insert_04(conn, snapshots)
        else:
            _insert_with_results(conn, snapshots, variant)

    write_index_sqlite(path, _SCHEMAS[variant], fill)


def _insert_04(conn: sqlite3.Connection, snapshots: Sequence[SnapshotSpec]) -> None:
    conn.executemany(
        'INSERT INTO "core_snapshot" ("url", "timestamp", "title", "tags", "added", "updated") '
        "VALUES (?, ?, ?, ?, ?, ?)",
        [
            (s.url, s.timestamp, s.title, ",".join(s.tags) or None, _django(s.bookmarked), None)
            for s in snapshots
        ],
    )


def _insert_with_results(conn: sqlite3.Connection, snapshots: Sequence[SnapshotSpec], variant: str) -> None:
    tag_ids: dict[str, int] = {}
    for snapshot in snapshots:
        for tag in snapshot.tags:
            tag_ids.setdefault(tag, len(tag_ids) + 1)
    now = _django(datetime(2024, 1, 1))
    if variant == "0.6":
        conn.executemany(
            'INSERT INTO "core_tag" ("id", "name", "slug") VALUES (?, ?, ?)',
            [(tag_id, tag, tag.lower()) for tag, tag_id in tag_ids.items()],
        )
        conn.executemany(
            'INSERT INTO "core_snapshot" ("id", "url", "timestamp", "title", "added", "updated") '
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (_hex(s.snapshot_id), s.url, s.timestamp, s.title, _django(s.bookmarked), now)
                for s in snapshots
            ],
        )
    else:
        conn.executemany(
            'INSERT INTO "core_tag" ("id", "abid", "name", "slug", "created_at", "modified_at", '
            '"created_by_id") VALUES (?, ?, ?, ?, ?, ?, 1)',
            [(tag_id, f"tag_{tag_id:026d}", tag, tag.lower(), now, now) for tag, tag_id in tag_ids.items()],
        )
        conn.executemany(
            'INSERT INTO "core_snapshot" ("id", "abid", "url", "timestamp", "title", '
            '"bookmarked_at", "created_at", "modified_at", "downloaded_at", "created_by_id") '
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
            [
                (
                    _hex(s.snapshot_id),
                    s.abid,
                    s.url,
                    s.timestamp,
                    s.title,
                    _django(s.bookmarked),
                    _django(s.bookmarked),
                    now,
                    now,
                )
                for s in snapshots
            ],
        )
    conn.executemany(
        'INSERT INTO "core_snapshot_tags" ("snapshot_id", "tag_id") VALUES (?, ?)',
        ((_hex(s.snapshot_id), tag_ids[tag]) for s in snapshots for tag in s.tags),
    )
    if variant == "0.6":
        conn.executemany(
            'INSERT INTO "core_archiveresult" ("uuid", "snapshot_id", "extractor", "cmd", "pwd", '
            '"cmd_version", "output", "start_ts", "end_ts", "status") '
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            _result_rows(snapshots),
        )
    else:
        conn.executemany(
            'INSERT INTO "core_archiveresult" ("id", "snapshot_id", "extractor", "cmd", "pwd", '
            '"cmd_version", "output", "start_ts", "end_ts", "status", "abid", "created_at", '
            '"modified_at", "created_by_id") '
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
            ((*row, f"res_{row[0][:26]}", now, now) for row in _result_rows(snapshots)),
        )


def _result_rows(snapshots: Sequence[SnapshotSpec]) -> Iterator[tuple[str, ...]]:
    """(result id, snapshot id, extractor, cmd, pwd, cmd_version, output, start, end, status)."""
    for s in snapshots:
        for number, r in enumerate(s.results):
            start, end = result_times(s, r)
            snapshot_hex = _hex(s.snapshot_id)
            yield (
                f"{snapshot_hex[:28]}{number:04d}",
                snapshot_hex,
                r.extractor,
                json.dumps(list(r.cmd)),
                f"/data/archive/{s.timestamp}",
                r.cmd_version,
                r.output,
                _django(start),
                _django(end),
                r.status,
            )


def _hex(snapshot_id: str) -> str:
    return snapshot_id.replace("-", "")
