"""Migration 0009 (capture kinds) on a data dir made before it: every row of every table
intact, then `page_fetch.kind` holds the browser's kinds (`screenshot`: longer than the 8
characters the column held) and still refuses any other kind (SQLite and PostgreSQL).

The data dir is a real crawl's, ingested at head, its catalog taken back to 0008 by Alembic
(0009 only widens a column and its check: the rows 0008's code wrote are the rows written here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import MetaData, String, Table, insert, inspect
from sqlalchemy.exc import DataError, IntegrityError

from archive_pipelines.catalog import make_engine
from archive_pipelines.catalog.migrate import alembic_config
from tests.helpers.captures import ingest_all, parts_of
from tests.helpers.catalog_tables import raw_tables, upgrade_to

BEFORE, AFTER = "0008_crawl_requests", "0009_capture_kinds"


def _kind_length(url: str) -> int | None:
    engine = make_engine(url)
    try:
        column = next(c for c in inspect(engine).get_columns("page_fetch") if c["name"] == "kind")
        assert isinstance(column["type"], String)
        return column["type"].length
    finally:
        engine.dispose()


def _store_copy(url: str, row: dict[str, Any], kind: str) -> None:
    """`row` stored again as a new capture of `kind` (a new id)."""
    engine = make_engine(url)
    try:
        table = Table("page_fetch", MetaData(), autoload_with=engine)
        values = {**{name: value for name, value in row.items() if name != "id"}, "kind": kind}
        with engine.begin() as conn:
            conn.execute(insert(table).values(**values))
    finally:
        engine.dispose()


def test_a_data_dir_from_before_capture_kinds_upgrades_intact(
        crawl_data: Path, catalog_url: str) -> None:
    with parts_of(crawl_data, catalog_url) as parts:
        ingest_all(parts, crawl_data)
        command.downgrade(alembic_config(parts.catalog.engine), BEFORE)
    old = raw_tables(catalog_url)
    page = next(row for row in old["page_fetch"] if row["kind"] == "page")
    assert _kind_length(catalog_url) == 8
    with pytest.raises((IntegrityError, DataError)):  # the old check, or PostgreSQL its length
        _store_copy(catalog_url, page, "screenshot")
    assert raw_tables(catalog_url) == old

    upgrade_to(catalog_url, AFTER)
    assert raw_tables(catalog_url) == old
    assert _kind_length(catalog_url) == 16

    for kind in ("screenshot", "dom"):
        _store_copy(catalog_url, page, kind)
    with pytest.raises(IntegrityError):  # the check is still there, with the new kinds only
        _store_copy(catalog_url, page, "television")
    stored = raw_tables(catalog_url)["page_fetch"]
    assert stored[:len(old["page_fetch"])] == old["page_fetch"]
    assert [row["kind"] for row in stored[len(old["page_fetch"]):]] == ["screenshot", "dom"]


def test_downgrade_below_capture_kinds_refuses_while_browser_captures_exist(
        crawl_data: Path, catalog_url: str) -> None:
    with parts_of(crawl_data, catalog_url) as parts:
        ingest_all(parts, crawl_data)
    page = next(row for row in raw_tables(catalog_url)["page_fetch"] if row["kind"] == "page")
    _store_copy(catalog_url, page, "screenshot")
    engine = make_engine(catalog_url)
    try:
        # Down to this migration first (later ones drop what they added, as they may), then
        # below it: refused, and nothing changed.
        command.downgrade(alembic_config(engine), AFTER)
        before = raw_tables(catalog_url)
        with pytest.raises(RuntimeError, match="1 captures are screenshots or DOMs"):
            command.downgrade(alembic_config(engine), BEFORE)
    finally:
        engine.dispose()
    assert raw_tables(catalog_url) == before
    assert _kind_length(catalog_url) == 16
