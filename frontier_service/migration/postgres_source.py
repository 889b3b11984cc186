"""The PostgreSQL frontier being migrated: its schema checked, its tables streamed in key
order through server-side cursors.

Each table is read ordered by one text column (its key: `url`, `url`, `domain`); a batch
always ends where the key changes, so "every row with key <= K is done" is a checkpoint
even when the key is not declared unique (rows sharing a URL are duplicates the seen filter
drops). Resuming asks for `key > K`: no OFFSET, nothing re-read, nothing skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from archive_pipelines.archive_error import ArchiveError


class SourceError(ArchiveError):
    """The PostgreSQL frontier cannot be read (bad DSN, unreachable, missing tables)."""


@dataclass(frozen=True, slots=True)
class TableSpec:
    """A source table: the columns read (the key first) and the column it is ordered by."""

    name: str
    columns: tuple[str, ...]

    @property
    def key(self) -> str:
        return self.columns[0]


DOMAINS = TableSpec("domain_metadata", ("domain", "robots_txt_content",
                                        "robots_txt_expires_timestamp", "is_manually_excluded",
                                        "last_scheduled_fetch_timestamp"))
VISITED = TableSpec("visited_urls", ("url", "url_sha256", "crawled_timestamp",
                                     "http_status_code", "content_storage_path",
                                     "redirected_to_url"))
FRONTIER = TableSpec("frontier", ("url", "domain", "depth", "added_timestamp"))
TABLES = (DOMAINS, VISITED, FRONTIER)  # the order they are migrated in

Row = tuple[Any, ...]


def libpq_dsn(dsn: str) -> str:
    """A DSN psycopg2 takes: SQLAlchemy's `postgresql+psycopg2://` becomes `postgresql://`."""
    return re.sub(r"^postgres(?:ql)?\+\w+://", "postgresql://", dsn.strip())


def describe_dsn(dsn: str) -> str:
    """`host:port/dbname` of a DSN, without its password (for messages and the checkpoint)."""
    import psycopg2

    try:
        parts = psycopg2.extensions.parse_dsn(libpq_dsn(dsn))
    except psycopg2.ProgrammingError:
        return "(unparsable DSN)"
    host = parts.get("host", "localhost")
    port = parts.get("port", "5432")
    return f"{host}:{port}/{parts.get('dbname', parts.get('user', ''))}"


class PostgresSource:
    """A read-only connection to the old frontier; `close()` when done."""

    def __init__(self, dsn: str, *, connect_timeout_s: int = 10) -> None:
        import psycopg2

        self.where = describe_dsn(dsn)
        try:
            psycopg2.extensions.parse_dsn(libpq_dsn(dsn))
        except psycopg2.ProgrammingError as exc:
            raise SourceError(f"bad PostgreSQL DSN: {_first_line(exc)} (expected e.g. "
                              "postgresql://user:password@host:5432/dbname)") from None
        try:
            self.conn = psycopg2.connect(libpq_dsn(dsn), connect_timeout=connect_timeout_s,
                                         application_name="frontier-service migrate")
        except psycopg2.OperationalError as exc:
            raise SourceError(f"cannot connect to PostgreSQL at {self.where}: "
                              f"{_first_line(exc)}") from None
        # One snapshot for the whole read: rows do not move under the cursors.
        self.conn.set_session(isolation_level="REPEATABLE READ", readonly=True)
        self._cursors = 0

    def close(self) -> None:
        self.conn.close()

    def check_schema(self, tables: Sequence[TableSpec] = TABLES) -> None:
        """SourceError naming every missing table and column."""
        problems = []
        with self.conn.cursor() as cur:
            for table in tables:
                cur.execute("SELECT a.attname FROM pg_attribute a WHERE a.attrelid = "
                            "to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped",
                            (table.name,))
                present = {row[0] for row in cur.fetchall()}
                if not present:
                    problems.append(f"no table {table.name}")
                    continue
                missing = [c for c in table.columns if c not in present]
                if missing:
                    problems.append(f"table {table.name} has no column "
                                    f"{', '.join(missing)}")
        self.conn.rollback()
        if problems:
            raise SourceError(f"{self.where} is not a frontier database of the expected "
                              f"design: {'; '.join(problems)} (expected {_expected(tables)})")

    def row_count(self, table: TableSpec, *, exact_below: int = 5_000_000) -> tuple[int, bool]:
        """(rows, exact): COUNT(*), or pg_class's estimate for a table that big."""
        with self.conn.cursor() as cur:
            cur.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass(%s)",
                        (table.name,))
            estimate = int(cur.fetchone()[0])
            if estimate >= exact_below:
                self.conn.rollback()
                return estimate, False
            cur.execute(f"SELECT count(*) FROM {_ident(table.name)}")
            count = int(cur.fetchone()[0])
        self.conn.rollback()
        return count, True

    def scalar(self, sql: str) -> int:
        with self.conn.cursor() as cur:
            cur.execute(sql)
            value = cur.fetchone()[0]
        self.conn.rollback()
        return int(value or 0)

    def rows_between(self, table: TableSpec, *, after: str | None, through: str) -> list[Row]:
        """The rows with after < key <= through, in key order, as one batch."""
        sql, params = _select(table, after=after, through=through)
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            rows = list(cur.fetchall())
        self.conn.rollback()
        return rows

    def batches(self, table: TableSpec, *, after: str | None = None,
                batch_rows: int = 20_000) -> Iterator[list[Row]]:
        """The table's rows with a non-null key in key order after `after`, in batches of
        about batch_rows that end where the key changes."""
        sql, params = _select(table, after=after, through=None)
        self._cursors += 1
        cur = self.conn.cursor(name=f"migrate_{table.name}_{self._cursors}")
        cur.itersize = batch_rows
        try:
            cur.execute(sql, params)
            held: list[Row] = []
            while True:
                rows = cur.fetchmany(batch_rows)
                if not rows:
                    break
                held += rows
                last = held[-1][0]
                cut = len(held)
                while cut > 0 and held[cut - 1][0] == last:
                    cut -= 1
                if cut:  # the rows of the last key may go on in the next fetch
                    yield held[:cut]
                    held = held[cut:]
            if held:
                yield held
        finally:
            cur.close()
            self.conn.rollback()


def _select(table: TableSpec, *, after: str | None, through: str | None
            ) -> tuple[str, list[str]]:
    where = [f"{_ident(table.key)} IS NOT NULL"]
    params: list[str] = []
    if after is not None:
        where.append(f"{_ident(table.key)} > %s")
        params.append(after)
    if through is not None:
        where.append(f"{_ident(table.key)} <= %s")
        params.append(through)
    return (f"SELECT {', '.join(map(_ident, table.columns))} FROM {_ident(table.name)} "
            f"WHERE {' AND '.join(where)} ORDER BY {_ident(table.key)}", params)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _expected(tables: Sequence[TableSpec]) -> str:
    return "; ".join(f"{t.name}({', '.join(t.columns)})" for t in tables)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
