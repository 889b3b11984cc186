"""A throwaway PostgreSQL cluster: initdb in a temp dir, as an unprivileged user under root."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from types import TracebackType

from archive_pipelines.services.ports import free_port, wait_until


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


class LocalPostgres:
    """A private cluster on a free port (trust auth, fsync off), removed on stop."""

    def __init__(self) -> None:
        initdb, postgres = find_pg_bin("initdb"), find_pg_bin("postgres")
        if not initdb or not postgres:
            raise RuntimeError("PostgreSQL server binaries not found "
                               "(apt-get install postgresql)")
        self.initdb, self.postgres = initdb, postgres
        self.user = _unprivileged_user()
        self.workdir = Path(tempfile.mkdtemp(prefix="ap-pg-"))
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/{name}"

    def start(self) -> LocalPostgres:
        if self.user:
            info = pwd.getpwnam(self.user)
            os.chown(self.workdir, info.pw_uid, info.pw_gid)
        data = self.workdir / "data"
        subprocess.run(
            [self.initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
             "--no-sync", "--locale=C"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, user=self.user,
        )
        self.port = free_port()
        with open(self.workdir / "postgres.log", "wb") as log:
            self._proc = subprocess.Popen(
                [self.postgres, "-D", str(data), "-p", str(self.port), "-k", str(self.workdir),
                 "-h", "127.0.0.1", "-F", "-c", "full_page_writes=off",
                 "-c", "synchronous_commit=off", "-c", "max_connections=200"],
                stdout=subprocess.DEVNULL, stderr=log, user=self.user,
            )
        wait_until(self._accepts, timeout=60, what="postgres",
                   alive=lambda: self._proc is not None and self._proc.poll() is None)
        return self

    def _accepts(self) -> bool:
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

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()  # SIGTERM = smart shutdown; SIGINT would be fast
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _connect_admin(server_url: str):  # type: ignore[no-untyped-def]
    import psycopg2
    from sqlalchemy.engine import make_url

    url = make_url(server_url)
    conn = psycopg2.connect(host=url.host, port=url.port, user=url.username,
                            password=url.password, dbname=url.database or "postgres")
    conn.autocommit = True
    return conn, url


def create_database(server_url: str, name: str | None = None) -> str:
    """CREATE DATABASE on the server of `server_url`; returns the new database's URL."""
    name = name or f"t_{uuid.uuid4().hex[:12]}"
    conn, url = _connect_admin(server_url)
    try:
        with conn.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
    finally:
        conn.close()
    return url.set(drivername="postgresql+psycopg2", database=name).render_as_string(
        hide_password=False)


def drop_database(server_url: str, name: str) -> None:
    conn, _ = _connect_admin(server_url)
    try:
        with conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        conn.close()
