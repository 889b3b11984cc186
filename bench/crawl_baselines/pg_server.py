"""PostgreSQL for the queue baseline: LocalPostgres, allowed one connection per worker.

The seed ran 500 workers on 600 connections; LocalPostgres caps connections at 200, so
this starts the same throwaway cluster with `max_connections` raised to fit.
"""

from __future__ import annotations

import os
import subprocess

from archive_pipelines.services import LocalPostgres, wait_until


class BenchPostgres(LocalPostgres):
    def __init__(self, max_connections: int) -> None:
        super().__init__()
        self.max_connections = max_connections

    def start(self) -> BenchPostgres:
        super().start()  # initdb and a first start; restarted below with more connections
        assert self._proc is not None
        self._proc.terminate()
        self._proc.wait(timeout=30)
        data = self.workdir / "data"
        with open(self.workdir / "postgres.log", "ab") as log:
            self._proc = subprocess.Popen(
                [self.postgres, "-D", str(data), "-p", str(self.port), "-k", str(self.workdir),
                 "-h", "127.0.0.1", "-F", "-c", "full_page_writes=off",
                 "-c", "synchronous_commit=off", "-c", f"max_connections={self.max_connections}",
                 "-c", "shared_buffers=256MB"],
                stdout=subprocess.DEVNULL, stderr=log, user=self.user,
            )
        wait_until(self._accepts, timeout=60, what="postgres",
                   alive=lambda: self._proc is not None and self._proc.poll() is None)
        return self


def asyncpg_dsn(sqlalchemy_url: str) -> str:
    """postgresql+psycopg2://... as the plain postgresql:// DSN asyncpg takes."""
    return sqlalchemy_url.replace("postgresql+psycopg2://", "postgresql://", 1)


def database_url_from_env() -> str | None:
    url = os.environ.get("DATABASE_URL")
    return asyncpg_dsn(url) if url else None
