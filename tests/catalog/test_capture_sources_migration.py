"""Migration 0006 (capture sources) on a data dir made before it: every row intact, every
session a crawl, and the import that follows records its WARC session (SQLite and PostgreSQL).

The data dir is a real crawl's, ingested, then taken back to 0005 by Alembic (0005's ingest
wrote the same rows less the session's kind, source and snapshot, which is all this change
adds). On SQLite the migration rebuilds `crawl_session` (batch mode): with foreign keys
enforced, dropping the old table would have deleted every capture and segment through ON
DELETE CASCADE, which is what this test was written to catch."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from alembic import command

from archive_pipelines.catalog.migrate import alembic_config
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import CatalogSettings, Settings
from archive_testkit.revisit_warcs import write_revisit_warc
from tests.helpers.captures import assert_storage_clean, ingest_all, parts_of
from tests.helpers.catalog_tables import raw_tables, upgrade_to
from tests.helpers.cli import CLI

BEFORE, AFTER = "0005_page_titles", "0006_capture_sources"
ADDED = ("kind", "source", "snapshot_id")


def test_a_data_dir_from_before_capture_sources_upgrades_intact(
        crawl_data: Path, catalog_url: str, tmp_path: Path) -> None:
    with parts_of(crawl_data, catalog_url) as parts:
        ingest_all(parts, crawl_data)
        command.downgrade(alembic_config(parts.catalog.engine), BEFORE)
    old = raw_tables(catalog_url)
    assert old["page_fetch"] and old["crawl_segment"] and "kind" not in old["crawl_session"][0]

    upgrade_to(catalog_url, AFTER)

    upgraded = raw_tables(catalog_url)
    assert {name: rows for name, rows in upgraded.items() if name != "crawl_session"} == {
        name: rows for name, rows in old.items() if name != "crawl_session"}
    assert [{k: v for k, v in row.items() if k not in ADDED} for row in upgraded["crawl_session"]] \
        == old["crawl_session"]
    assert all((row["kind"], row["source"], row["snapshot_id"]) == ("crawl", None, None)
               for row in upgraded["crawl_session"])

    report = initialize(Settings(data_dir=crawl_data, catalog=CatalogSettings(url=catalog_url)))
    assert report.schema_before == AFTER
    warc = write_revisit_warc(tmp_path / "after.warc.gz").path
    env = {**os.environ, "ARCHIVE_DATA_DIR": str(crawl_data), "DATABASE_URL": catalog_url}
    run = subprocess.run([*CLI, "import-warc", str(warc)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert run.returncode == 1 and "no such body" in run.stderr  # the kit's unresolvable revisit
    after = raw_tables(catalog_url)
    kinds = sorted(row["kind"] for row in after["crawl_session"])
    assert kinds == ["crawl"] * len(old["crawl_session"]) + ["warc"]
    assert len(after["page_fetch"]) > len(old["page_fetch"])
    with parts_of(crawl_data, catalog_url) as parts:
        assert_storage_clean(parts, crawl_data)
