"""Catalog tables read by reflection, without the models: what a data dir made by older code
holds, for the migration tests."""

from __future__ import annotations

from typing import Any

from sqlalchemy import MetaData, select

from archive_pipelines.catalog import make_engine

Tables = dict[str, list[dict[str, Any]]]


def raw_tables(url: str) -> Tables:
    """Every row of every catalog table (but Alembic's), by primary key, read by reflection."""
    engine = make_engine(url)
    try:
        meta = MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:
            return {name: [dict(row._mapping) for row in conn.execute(
                        select(table).order_by(*table.primary_key.columns))]
                    for name, table in sorted(meta.tables.items()) if name != "alembic_version"}
    finally:
        engine.dispose()
