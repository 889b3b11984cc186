"""For the migration tests: catalog tables read by reflection, without the models (what a
data dir made by older code holds), a real crawl's data dir taken back to an older schema,
and the catalog upgraded to exactly one revision."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from alembic import command
from sqlalchemy import MetaData, select

from archive_pipelines.catalog import make_engine
from archive_pipelines.catalog.migrate import alembic_config
from frontier_service.archiving import iter_records
from tests.helpers.captures import ingest_all, parts_of

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


def upgrade_to(url: str, revision: str, **attributes: object) -> None:
    """The catalog at `url` upgraded to exactly `revision` (later ones have tests of their own);
    `attributes` go to the migrations (`config.attributes`)."""
    engine = make_engine(url)
    try:
        config = alembic_config(engine)
        config.attributes.update(attributes)
        command.upgrade(config, revision)
    finally:
        engine.dispose()


def ingested_but_the_last_segment(crawl_data: Path, catalog_url: str, aside_dir: Path, *,
                                  back_to: str) -> tuple[Path, Path]:
    """A real crawl's data dir ingested, its last segment with a page title set aside in
    `aside_dir` first (crawled before the upgrade, to ingest after it), then its catalog taken
    back to `back_to` by Alembic. (The very last segment may hold no page at all: segments
    close on time too, and a slow machine's last one held only assets.)

    Returns: where the segment belongs, and where it is set aside."""
    segments = sorted(crawl_data.glob("sessions/*/*/*.jsonl"), key=lambda p: p.name)
    assert len(segments) >= 2
    titled = [segment for segment in segments[1:]
              if any(record.get("title") for record in iter_records(segment))]
    assert titled, "no segment after the first holds a page with a title"
    held = titled[-1]
    aside = aside_dir / held.name
    aside.parent.mkdir()
    shutil.move(held, aside)
    with parts_of(crawl_data, catalog_url) as parts:
        ingest_all(parts, crawl_data)
        command.downgrade(alembic_config(parts.catalog.engine), back_to)
    return held, aside
