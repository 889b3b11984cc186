"""A server binary run as a child process on a free loopback port: start, wait until it answers, stop.

The embedded-default redis-server uses it, and so do the test kit's throwaway servers.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import IO, Self


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(ready: Callable[[], bool], *, timeout: float, what: str,
               alive: Callable[[], bool] = lambda: True) -> None:
    """Poll `ready` until true; a RuntimeError naming `what` on timeout or early death."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if not alive():
            raise RuntimeError(f"{what} exited during startup")
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not become ready within {timeout:.0f}s")


class ServerProcess:
    """One server child process: `_launch` starts it and waits for `_answers`; `stop` ends it.

    A subclass sets `what` (named in startup errors) and the timeouts, implements `start`
    (choose `self.port`, build the command line, call `_launch`) and `_answers`, and may
    override `_cleanup` to remove what it created once the process is gone.
    """

    what = "server"
    startup_timeout = 30.0
    stop_timeout = 10.0  # after SIGTERM, before SIGKILL
    # A process group of its own: a terminal's Ctrl-C then reaches only the parent, which
    # stops its servers last, in order (`make cluster`). Off: they share the parent's group.
    new_session = False

    def __init__(self) -> None:
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def _answers(self) -> bool:
        raise NotImplementedError

    def _launch(self, args: Sequence[str], *, stderr: int | IO[bytes] = subprocess.DEVNULL,
                user: str | None = None) -> None:
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=stderr, user=user,
                                      start_new_session=self.new_session)
        wait_until(self._answers, timeout=self.startup_timeout, what=self.what,
                   alive=self.running)

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (benchmarks read its CPU time)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def stop(self) -> None:
        """SIGTERM, SIGKILL if it outlives `stop_timeout`, then `_cleanup`."""
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        self._cleanup()

    def kill(self) -> None:
        """SIGKILL, as a crash would: nothing is flushed or cleaned up (`stop` still is)."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def _cleanup(self) -> None:
        """Nothing by default."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
