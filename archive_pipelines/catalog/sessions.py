"""Catalog transactions: write sessions and read-only sessions, errors made readable."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from archive_pipelines.catalog.engine import reader
from archive_pipelines.catalog.errors import clear_catalog_errors


class Transactions:
    """`session()` for writes, `read_session()` for reads (never blocks writers on SQLite)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._read_sessions = sessionmaker(reader(engine), expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One write transaction: committed on success, rolled back on error."""
        with clear_catalog_errors(), self._sessions() as session, session.begin():
            yield session

    @contextmanager
    def read_session(self) -> Iterator[Session]:
        """A read-only transaction (a plain BEGIN on SQLite, so writers are not blocked)."""
        with clear_catalog_errors(), self._read_sessions() as session, session.begin():
            yield session


class Catalog(Transactions):
    """The catalog a domain function reads and writes: transactions over one engine (the
    SQL itself lives in the catalog's repository functions)."""
