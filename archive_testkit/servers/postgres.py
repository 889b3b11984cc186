"""A throwaway PostgreSQL cluster: initdb in a temp dir, as an unprivileged user under root."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Self

from sqlalchemy.engine import URL, make_url

from archive_pipelines.server_process import ServerProcess, free_port


def find_pg_bin(name: str) -> str | None:
    """A PostgreSQL server binary: on PATH, else the newest /usr/lib/postgresql/*/bin."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                        key=lambda p: int(Path(p).parts[4]) if Path(p).parts[4].isdigit() else 0)
    return candidates[-1] if candidates else None


def _unprivileged_user() -> str | None:
    """PostgreSQL refuses to run as root: pick `postgres`, else `nobody`."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and no unprivileged user (postgres, nobody) exists")


class LocalPostgres(ServerProcess):
    """A private cluster on a free port (trust auth, fsync off), removed on stop.

    `settings` are extra `name=value` server settings (e.g. `shared_buffers=256MB`).
    """

    what = "postgres"
    startup_timeout = 60.0
    stop_timeout = 20.0  # SIGTERM = smart shutdown; SIGINT would be fast

    def __init__(self, *, max_connections: int = 200, settings: Sequence[str] = ()) -> None:
        super().__init__()
        initdb, postgres = find_pg_bin("initdb"), find_pg_bin("postgres")
        if not initdb or not postgres:
            raise RuntimeError("PostgreSQL server binaries not found "
                               "(apt-get install postgresql)")
        self.initdb, self.postgres = initdb, postgres
        self.max_connections = max_connections
        self.settings = tuple(settings)
        self.user = _unprivileged_user()
        self.workdir = Path(tempfile.mkdtemp(prefix="ap-pg-"))

    @property
    def url(self) -> str:
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/{name}"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    def start(self) -> Self:
        """initdb and start on a free port; again after a stop or crash (not `stop`, which
        removes the cluster): the same cluster on the same port, recovering as after a crash."""
        if self._proc is not None:  # it died (killed, or a server shutdown): reap it
            self._proc.wait(timeout=self.stop_timeout)
        if self.user:
            info = pwd.getpwnam(self.user)
            os.chown(self.workdir, info.pw_uid, info.pw_gid)
        data = self.data_dir
        if not (data / "PG_VERSION").exists():
            subprocess.run(
                [self.initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                 "--no-sync", "--locale=C"],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, user=self.user,
            )
        self.port = self.port or free_port()
        settings = ("full_page_writes=off", "synchronous_commit=off",
                    f"max_connections={self.max_connections}", *self.settings)
        with open(self.workdir / "postgres.log", "ab") as log:
            self._launch([self.postgres, "-D", str(data), "-p", str(self.port), "-k", str(self.workdir),
                          "-h", "127.0.0.1", "-F", *(arg for s in settings for arg in ("-c", s))],
                         stderr=log, user=self.user)
        return self

    def _answers(self) -> bool:
        import psycopg2

        try:
            psycopg2.connect(host="127.0.0.1", port=self.port, user="postgres",
                             dbname="postgres", connect_timeout=1).close()
            return True
        except psycopg2.OperationalError:
            return False

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its SQLAlchemy URL."""
        return create_database(self.url, name)

    def _cleanup(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


def _run_admin(server_url: str, statement: str) -> URL:
    """One autocommit statement (CREATE/DROP DATABASE) on the server; returns its URL."""
    import psycopg2

    url = make_url(server_url)
    conn = psycopg2.connect(host=url.host, port=url.port, user=url.username,
                            password=url.password, dbname=url.database or "postgres")
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(statement)
    finally:
        conn.close()
    return url


def create_database(server_url: str, name: str | None = None) -> str:
    """CREATE DATABASE on the server of `server_url`; returns the new database's URL."""
    name = name or f"t_{uuid.uuid4().hex[:12]}"
    url = _run_admin(server_url, f'CREATE DATABASE "{name}"')
    return url.set(drivername="postgresql+psycopg2", database=name).render_as_string(
        hide_password=False)


def drop_database(server_url: str, name: str) -> None:
    _run_admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
