"""index.sqlite3 with the Django schema and rows ArchiveBox 0.7.2 ends with."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from archive_testkit.archivebox.aged07.model import SnapshotPlan
from archive_testkit.archivebox.formats import django_datetime, slugify
from archive_testkit.archivebox.index_sqlite import write_index_sqlite

# The core migrations a 0.7.2 database has applied (ArchiveBox's own 0.7 fixture lists these).
_MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("contenttypes", "0001_initial"),
    ("contenttypes", "0002_remove_content_type_name"),
    ("auth", "0001_initial"),
    ("auth", "0002_alter_permission_name_max_length"),
    ("auth", "0003_alter_user_email_max_length"),
    ("auth", "0004_alter_user_username_opts"),
    ("auth", "0005_alter_user_last_login_null"),
    ("auth", "0006_require_contenttypes_0002"),
    ("auth", "0007_alter_validators_add_error_messages"),
    ("auth", "0008_alter_user_username_max_length"),
    ("auth", "0009_alter_user_last_name_max_length"),
    ("auth", "0010_alter_group_name_max_length"),
    ("auth", "0011_update_proxy_permissions"),
    ("auth", "0012_alter_user_first_name_max_length"),
    ("admin", "0001_initial"),
    ("admin", "0002_logentry_remove_auto_add"),
    ("admin", "0003_logentry_add_action_flag_choices"),
    ("sessions", "0001_initial"),
    ("core", "0001_initial"),
    ("core", "0002_auto_20200625_1521"),
    ("core", "0003_auto_20200630_1034"),
    ("core", "0004_auto_20200713_1552"),
    ("core", "0005_auto_20200728_0326"),
    ("core", "0006_auto_20201012_1520"),
    ("core", "0007_archiveresult"),
    ("core", "0008_auto_20210105_1421"),
    ("core", "0009_auto_20210216_1038"),
    ("core", "0010_auto_20210216_1055"),
    ("core", "0011_auto_20210216_1331"),
    ("core", "0012_auto_20210216_1425"),
    ("core", "0013_auto_20210218_0729"),
    ("core", "0014_auto_20210218_0729"),
    ("core", "0015_auto_20210218_0730"),
    ("core", "0016_auto_20210218_1204"),
    ("core", "0017_auto_20210219_0211"),
    ("core", "0018_auto_20210327_0952"),
    ("core", "0019_auto_20210401_0654"),
    ("core", "0020_auto_20210410_1031"),
    ("core", "0021_auto_20220914_0934"),
    ("core", "0022_auto_20231023_2008"),
)


def _index_name(table: str, columns: Sequence[str], suffix: str = "") -> str:
    """Django's _create_index_name (names_digest = md5 of table + columns, 8 hex chars)."""
    digest = hashlib.md5()
    for part in (table, *columns):
        digest.update(part.encode())
    return f"{table}_{'_'.join(columns)}_{digest.hexdigest()[:8]}{suffix}"


def _index_sql(table: str, column: str) -> str:
    return f'CREATE INDEX "{_index_name(table, (column,))}" ON "{table}" ("{column}")'


def _ddl() -> str:
    fk = "DEFERRABLE INITIALLY DEFERRED"
    statements = [
        'CREATE TABLE "django_migrations" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, '
        '"app" varchar(255) NOT NULL, "name" varchar(255) NOT NULL, "applied" datetime NOT NULL)',
        'CREATE TABLE "django_content_type" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, '
        '"app_label" varchar(100) NOT NULL, "model" varchar(100) NOT NULL)',
        f'CREATE UNIQUE INDEX "{_index_name("django_content_type", ("app_label", "model"), "_uniq")}" '
        'ON "django_content_type" ("app_label", "model")',
        'CREATE TABLE "auth_user" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, '
        '"password" varchar(128) NOT NULL, "last_login" datetime NULL, "is_superuser" bool NOT NULL, '
        '"username" varchar(150) NOT NULL UNIQUE, "last_name" varchar(150) NOT NULL, '
        '"email" varchar(254) NOT NULL, "is_staff" bool NOT NULL, "is_active" bool NOT NULL, '
        '"date_joined" datetime NOT NULL, "first_name" varchar(150) NOT NULL)',
        'CREATE TABLE "django_session" ("session_key" varchar(40) NOT NULL PRIMARY KEY, '
        '"session_data" text NOT NULL, "expire_date" datetime NOT NULL)',
        _index_sql("django_session", "expire_date"),
        # core: column order as Django's table rebuilds leave it (altered column moves last).
        'CREATE TABLE "core_tag" ("name" varchar(100) NOT NULL UNIQUE, '
        '"slug" varchar(100) NOT NULL UNIQUE, "id" integer NOT NULL PRIMARY KEY AUTOINCREMENT)',
        'CREATE TABLE "core_snapshot" ("id" char(32) NOT NULL PRIMARY KEY, '
        '"timestamp" varchar(32) NOT NULL UNIQUE, "title" varchar(512) NULL, "added" datetime NOT NULL, '
        '"updated" datetime NULL, "url" varchar(200) NOT NULL UNIQUE)',
        _index_sql("core_snapshot", "title"),
        _index_sql("core_snapshot", "added"),
        _index_sql("core_snapshot", "updated"),
        'CREATE TABLE "core_snapshot_tags" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, '
        f'"snapshot_id" char(32) NOT NULL REFERENCES "core_snapshot" ("id") {fk}, '
        f'"tag_id" integer NOT NULL REFERENCES "core_tag" ("id") {fk})',
        f'CREATE UNIQUE INDEX "{_index_name("core_snapshot_tags", ("snapshot_id", "tag_id"), "_uniq")}" '
        'ON "core_snapshot_tags" ("snapshot_id", "tag_id")',
        _index_sql("core_snapshot_tags", "snapshot_id"),
        _index_sql("core_snapshot_tags", "tag_id"),
        'CREATE TABLE "core_archiveresult" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, '
        '"cmd" text NOT NULL CHECK ((JSON_VALID("cmd") OR "cmd" IS NULL)), "pwd" varchar(256) NOT NULL, '
        '"cmd_version" varchar(128) NULL, "status" varchar(16) NOT NULL, "output" varchar(1024) NOT NULL, '
        '"start_ts" datetime NOT NULL, "end_ts" datetime NOT NULL, '
        f'"snapshot_id" char(32) NOT NULL REFERENCES "core_snapshot" ("id") {fk}, '
        '"uuid" char(32) NOT NULL, "extractor" varchar(32) NOT NULL)',
        _index_sql("core_archiveresult", "snapshot_id"),
        _index_sql("core_archiveresult", "start_ts"),
    ]
    return ";\n".join(statements) + ";\n"


def _migration_applied(app: str, name: str, installed: datetime) -> datetime:
    """When each migration ran: at the 0.4 install, then at each upgrade (0.5, 0.6, 0.6.3, 0.7)."""
    if app != "core" and name != "0012_alter_user_first_name_max_length":
        return installed
    number = int(name[:4]) if app == "core" else 20
    for last, when in ((4, installed), (7, _UPGRADES[0]), (20, _UPGRADES[1]), (21, _UPGRADES[2])):
        if number <= last:
            return when
    return _UPGRADES[3]


_UPGRADES = (
    datetime(2020, 11, 21, 14, 2, 9, 381000, tzinfo=UTC),  # 0.5.x
    datetime(2021, 4, 12, 8, 45, 1, 902113, tzinfo=UTC),  # 0.6.x
    datetime(2022, 10, 3, 19, 12, 44, 17090, tzinfo=UTC),  # 0.6.3
    datetime(2023, 11, 18, 22, 4, 51, 103422, tzinfo=UTC),  # 0.7.x
)


def write_sqlite(path: Path, plans: list[SnapshotPlan]) -> None:
    """Write the 0.7.2 index.sqlite3 of `plans` (orphans have no row) to `path`."""
    indexed = sorted((plan for plan in plans if plan.in_sqlite), key=lambda plan: plan.added)
    installed = min(plan.added for plan in plans) - timedelta(minutes=47, microseconds=123457)

    def fill(conn: sqlite3.Connection) -> None:
        conn.executemany(
            'INSERT INTO "django_migrations" ("app", "name", "applied") VALUES (?, ?, ?)',
            [
                (
                    app,
                    name,
                    django_datetime(
                        _migration_applied(app, name, installed) + timedelta(milliseconds=37 * number)
                    ),
                )
                for number, (app, name) in enumerate(_MIGRATIONS)
            ],
        )
        conn.executemany(
            'INSERT INTO "django_content_type" ("app_label", "model") VALUES (?, ?)',
            [
                ("contenttypes", "contenttype"),
                ("auth", "permission"),
                ("auth", "group"),
                ("auth", "user"),
                ("admin", "logentry"),
                ("sessions", "session"),
                ("core", "snapshot"),
                ("core", "tag"),
                ("core", "archiveresult"),
            ],
        )
        tag_ids: dict[str, int] = {}
        for plan in indexed:
            for tag in plan.tags:
                if tag not in tag_ids:
                    tag_ids[tag] = len(tag_ids) + 1
                    conn.execute(
                        'INSERT INTO "core_tag" ("name", "slug", "id") VALUES (?, ?, ?)',
                        (tag, slugify(tag), tag_ids[tag]),
                    )
            conn.execute(
                'INSERT INTO "core_snapshot" ("id", "timestamp", "title", "added", "updated", "url") '
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    plan.snapshot_uuid.hex,
                    plan.timestamp,
                    plan.title,
                    django_datetime(plan.added),
                    django_datetime(plan.db_updated) if plan.db_updated else None,
                    plan.url,
                ),
            )
            conn.executemany(
                'INSERT INTO "core_snapshot_tags" ("snapshot_id", "tag_id") VALUES (?, ?)',
                [(plan.snapshot_uuid.hex, tag_ids[tag]) for tag in plan.tags],
            )
        results = sorted(
            ((result, plan) for plan in indexed for result in plan.results),
            key=lambda pair: pair[0].start,
        )
        for row_id, (result, plan) in enumerate(results, start=1):
            result.row_id = row_id
            conn.execute(
                'INSERT INTO "core_archiveresult" ("id", "cmd", "pwd", "cmd_version", "status", '
                '"output", "start_ts", "end_ts", "snapshot_id", "uuid", "extractor") '
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row_id,
                    json.dumps(result.cmd),
                    result.pwd,
                    result.cmd_version,
                    result.status,
                    result.db_output,
                    django_datetime(result.start),
                    django_datetime(result.end),
                    plan.snapshot_uuid.hex,
                    result.uuid.hex,
                    result.extractor,
                ),
            )

    write_index_sqlite(path, _ddl(), fill)
