"""`migrate-from-postgres --dry-run`: what a migration would find, writing nothing."""

from __future__ import annotations

import time

from archive_pipelines.canonical_urls import try_canonical_many
from frontier_service.migration.migrate_progress import MigrateProgress
from frontier_service.migration.migrate_tables import domain_key_of, epoch_seconds
from frontier_service.migration.postgres_source import (
    DOMAINS,
    FRONTIER,
    TABLES,
    VISITED,
    PostgresSource,
    TableSpec,
)


def dry_run(source: PostgresSource, *, batch_rows: int = 20_000,
            progress: MigrateProgress | None = None) -> dict[str, dict[str, int]]:
    """Per table: rows, rows without a key, invalid URLs or domains, distinct domains, and
    for `frontier` the rows already in `visited_urls` (same URL text)."""
    source.check_schema()
    progress = progress or MigrateProgress()
    now = time.time()
    report: dict[str, dict[str, int]] = {}
    for table in TABLES:
        counts = {"rows": 0, "rows_without_key": _null_keys(source, table), "invalid": 0}
        progress.start(table.name, total=source.row_count(table)[0], exact=True, done=0)
        domains: set[str] = set()
        for rows in source.batches(table, batch_rows=batch_rows):
            counts["rows"] += len(rows)
            if table is DOMAINS:
                for domain, body, expires, excluded, scheduled in rows:
                    key = domain_key_of(domain)
                    counts["invalid"] += key is None
                    counts["excluded"] = counts.get("excluded", 0) + bool(excluded)
                    counts["with_next_fetch"] = (counts.get("with_next_fetch", 0)
                                                 + (scheduled is not None))
                    expires_at = epoch_seconds(expires)
                    counts["with_unexpired_robots"] = counts.get("with_unexpired_robots", 0) + (
                        body is not None and expires_at is not None and expires_at > now)
            else:
                for found in try_canonical_many([row[0] for row in rows]):
                    if found is None:
                        counts["invalid"] += 1
                    else:
                        domains.add(found[1])
            progress.advance(len(rows))
        progress.finish()
        counts["rows"] += counts["rows_without_key"]
        if table is not DOMAINS:
            counts["distinct_domains"] = len(domains)
        report[table.name] = counts
    report[FRONTIER.name]["already_visited"] = source.scalar(
        f"SELECT count(*) FROM {FRONTIER.name} f WHERE EXISTS "
        f"(SELECT 1 FROM {VISITED.name} v WHERE v.url = f.url)")
    return report


def _null_keys(source: PostgresSource, table: TableSpec) -> int:
    return source.scalar(f'SELECT count(*) FROM {table.name} WHERE "{table.key}" IS NULL')
