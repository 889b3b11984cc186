"""PostgreSQL for the queue baseline: LocalPostgres, allowed one connection per worker.

The seed ran 500 workers on 600 connections; LocalPostgres caps connections at 200, so
this starts the same throwaway cluster with `max_connections` raised to fit (and more
shared buffers).
"""

from __future__ import annotations

import os

from archive_testkit.servers import LocalPostgres


class BenchPostgres(LocalPostgres):
    def __init__(self, max_connections: int) -> None:
        super().__init__(max_connections=max_connections, settings=("shared_buffers=256MB",))


def asyncpg_dsn(sqlalchemy_url: str) -> str:
    """postgresql+psycopg2://... as the plain postgresql:// DSN asyncpg takes."""
    return sqlalchemy_url.replace("postgresql+psycopg2://", "postgresql://", 1)


def database_url_from_env() -> str | None:
    url = os.environ.get("DATABASE_URL")
    return asyncpg_dsn(url) if url else None
