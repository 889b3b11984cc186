"""Engines for SQLite (WAL, busy timeout, foreign keys) and PostgreSQL from one code path."""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import ArgumentError, OperationalError

from archive_pipelines.catalog.urls import normalize_catalog_url, redact_url
from archive_pipelines.errors import CatalogError

READ_ONLY = "archive_read_only"

_shared: dict[tuple[str, int], Engine] = {}
_shared_lock = threading.Lock()


def reader(engine: Engine) -> Engine:
    """The same engine (and pool) for read-only transactions."""
    return engine.execution_options(**{READ_ONLY: True})


def make_engine(url: str, *, busy_timeout_ms: int = 30_000, check: bool = True) -> Engine:
    """An engine for the catalog URL; `check` connects once so a bad URL fails here, clearly."""
    url = normalize_catalog_url(url)
    try:
        if url.startswith("sqlite"):
            engine = create_engine(
                url,
                connect_args={"timeout": busy_timeout_ms / 1000, "check_same_thread": False},
            )
            _configure_sqlite(engine, busy_timeout_ms)
        else:
            engine = create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)
    except (ArgumentError, ValueError) as exc:
        raise CatalogError(f"catalog url {redact_url(url)!r} is not valid: {exc}") from None
    except ModuleNotFoundError as exc:
        raise CatalogError(f"catalog url {redact_url(url)!r}: driver missing: {exc}") from None
    if check:
        ping(engine)
    return engine


def shared_engine(url: str, *, busy_timeout_ms: int = 30_000) -> Engine:
    """The process's one engine (and connection pool) for this catalog, made and checked by
    `make_engine` on first use. The Dagster resources and the CLI take theirs from here;
    `dispose()` on it only closes its pooled connections (it stays usable)."""
    key = (normalize_catalog_url(url), busy_timeout_ms)
    with _shared_lock:
        engine = _shared.get(key)
        if engine is None:
            engine = _shared[key] = make_engine(url, busy_timeout_ms=busy_timeout_ms)
        return engine


def ping(engine: Engine) -> None:
    """Connect once, turning driver errors into one clear line."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise CatalogError(
            f"catalog {redact_url(engine.url.render_as_string(hide_password=False))!r} "
            f"is unreachable: {reason}"
        ) from None


def _configure_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        # Let SQLAlchemy, not pysqlite, decide when transactions begin.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # Writers: IMMEDIATE takes the write lock up front (no failing lock upgrades).
        # Readers (engine.execution_options(read_only=True)): a plain BEGIN, so a long
        # verify or rebuild never blocks writers, and WAL lets readers run side by side.
        if conn.get_execution_options().get(READ_ONLY):
            conn.exec_driver_sql("BEGIN")
        else:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
