"""Captures recorded by `record_segment` are stored as given, column for column and type for
type, whichever way the rows reach the database: on SQLite a prepared INSERT run per row, on
PostgreSQL (and in the SQLite run forced to it) the row set unpacked by the database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from archive_pipelines.catalog import (
    Body,
    CaptureRow,
    Catalog,
    SegmentRows,
    make_engine,
    upgrade_catalog,
    utcnow,
)
from archive_pipelines.catalog.models import PageFetch
from archive_testkit.recorded_captures import primary_store_id

_SHA = "ab" * 32


def _captures() -> list[tuple[int, CaptureRow]]:
    plain = CaptureRow("page", None, "http://a.test/", "1" * 64, "http://a.test",
                       "http://a.test/", 1_700_000_000_123, 200, "http://a.test/", None,
                       "text/html", _SHA, 12, False, None, None, 0, title=None)
    return [
        (0, plain),
        (2**40, plain._replace(kind="request", url="http://a.test/é?q=ü&x=\"'\\", title="Tïtle\n",
                               navigation_id="nav", redirects='[["u", 301, "v"]]', truncated=True,
                               depth=3, request_index=2, body_size=2**40)),
        (7, plain._replace(kind="redirect", status_code=None, body_sha256=None, body_size=None,
                           content_type=None, final_url=None, error="connection refused " * 50)),
        (9, plain._replace(url="http://a.test/" + "x" * 5000, body_sha256="cd" * 32)),
    ]


def _record(catalog: Catalog, *, path: str) -> None:
    with catalog.transaction() as tx:
        store_id = primary_store_id(tx)
        blob = Body("ef" * 32, 5, "application/warc")
        tx.captures.record_segment(SegmentRows(
            path=path, sha256=blob.sha256, session_id="s-1", index_dir="imports/x",
            segment_blob=blob, captures=_captures(), bodies={_SHA: Body(_SHA, 12, "text/html")},
            records=4, rejected=0, cut_bytes=0, pages=1, first_ms=1, last_ms=2),
            primary_store_id=store_id, now=utcnow())


def _stored(catalog: Catalog) -> list[tuple[Any, ...]]:
    table = PageFetch.__table__
    columns = [c for c in table.columns if c.name not in ("id", "segment_id")]
    typed = [func.typeof(c) for c in columns] if catalog.engine.dialect.name == "sqlite" else []
    with catalog.reading() as tx:
        rows = tx.session.execute(select(*columns, *typed).order_by(PageFetch.record_offset))
        return [tuple(row) for row in rows]


def test_captures_are_stored_as_given(catalog: Catalog) -> None:
    _record(catalog, path="imports/x/1")
    stored = _stored(catalog)
    assert len(stored) == 4
    names = [c.name for c in PageFetch.__table__.columns
             if c.name not in ("id", "segment_id")]
    by_name = [dict(zip(names, row, strict=False)) for row in stored]
    for (offset, capture), row in zip(sorted(_captures()), by_name, strict=True):
        assert row["record_offset"] == offset
        for field, value in capture._asdict().items():
            assert row[field] == value, field
        assert row["body_blob_id"] is not None or capture.body_sha256 != _SHA


def test_sqlite_rows_are_those_of_the_row_set(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    catalogs = []
    for name in ("driver", "row-set"):
        engine = make_engine(f"sqlite:///{tmp_path / name}.sqlite3")
        upgrade_catalog(engine)
        catalogs.append(Catalog(engine))
    driver, row_set = catalogs
    _record(driver, path="imports/x/1")
    with monkeypatch.context() as patched:  # any name but sqlite/postgresql: the row set's path
        patched.setattr(row_set.engine.dialect, "name", "sqlite-row-set")
        _record(row_set, path="imports/x/1")
    try:
        assert _stored(driver) == _stored(row_set)
        assert len(_stored(driver)) == 4
    finally:
        for catalog in catalogs:
            catalog.engine.dispose()
