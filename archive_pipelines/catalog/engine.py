"""Engines for SQLite (WAL, busy timeout, foreign keys) and PostgreSQL from one code path.

PostgreSQL connections are bounded: a connect timeout, and TCP keepalives plus a TCP user
timeout so a server that vanished mid-query is noticed in about a minute instead of never.
`retry_on_connection_loss` repeats whole transactions that are safe to repeat.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError

from archive_pipelines.archive_error import CatalogError
from archive_pipelines.catalog.urls import normalize_catalog_url, redact_url

READ_ONLY = "archive_read_only"
T = TypeVar("T")

# libpq connection settings, unless the catalog URL sets them itself.
POSTGRES_CONNECT_ARGS: dict[str, int] = {
    "connect_timeout": 10,  # seconds to establish a connection
    "keepalives": 1,
    "keepalives_idle": 30,  # seconds of silence before probing the server
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "tcp_user_timeout": 60_000,  # ms a sent request may stay unacknowledged
}
# SQLSTATEs after which the same transaction can simply run again: connection exceptions,
# the server shutting down or starting, serialization failures and deadlocks.
_RETRY_SQLSTATE_PREFIXES = ("08", "57P01", "57P02", "57P03", "40001", "40P01")

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
            given = make_url(url).query
            engine = create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10,
                                   pool_timeout=30, connect_args={
                                       k: v for k, v in POSTGRES_CONNECT_ARGS.items()
                                       if k not in given})
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


def connection_lost(exc: BaseException) -> bool:
    """Whether `exc` (or what it was raised from) is a lost or refused PostgreSQL connection,
    a server restart, a serialization failure or a deadlock: nothing a rerun cannot fix."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DBAPIError):
            if current.connection_invalidated:
                return True
            orig = current.orig
            if type(orig).__module__.split(".")[0] in ("psycopg2", "psycopg"):
                code = getattr(orig, "pgcode", None) or getattr(orig, "sqlstate", None)
                if code is None:  # libpq's own: could not connect, server closed the connection
                    return isinstance(current, OperationalError) or "closed" in str(orig)
                return str(code).startswith(_RETRY_SQLSTATE_PREFIXES)
            return False
        current = current.__cause__ or current.__context__
    return False


def retry_on_connection_loss(work: Callable[[], T], *, what: str, attempts: int = 3,
                             first_delay: float = 0.5) -> T:
    """`work()`, run again (up to `attempts` times in all, with doubling delays) after a lost
    PostgreSQL connection. Only for work that is safe to repeat: a read-only transaction, or
    one whole transaction of idempotent writes. Gives up with a one-line CatalogError."""
    for attempt in range(1, attempts + 1):
        try:
            return work()
        except Exception as exc:
            if not connection_lost(exc):
                raise
            if attempt == attempts:
                raise CatalogError(f"catalog connection lost while {what} "
                                   f"({attempts} attempts): {_first_line(exc)}") from exc
            time.sleep(first_delay * 2 ** (attempt - 1))
    raise AssertionError("unreachable")  # the loop returns or raises


def _first_line(exc: BaseException) -> str:
    inner = exc.__cause__ if isinstance(exc, CatalogError) and exc.__cause__ else exc
    orig = getattr(inner, "orig", None)
    text_ = str(orig if orig is not None else inner).strip()
    return text_.splitlines()[0] if text_ else type(inner).__name__


SQLITE_CACHE_KIB = 64 * 1024  # per connection, filled only as pages are read


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
        # 64 MiB of page cache (SQLite's default is 2 MiB): a capture's row updates six
        # indexes at scattered places; with the small cache each batch re-read them.
        cur.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
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
