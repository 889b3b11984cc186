"""Running the test web beside synchronous code: in a thread, or as a separate process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from archive_testkit.testweb.cli import config_to_args
from archive_testkit.testweb.config import TestWebConfig
from archive_testkit.testweb.server import TestWeb

_START_TIMEOUT_S = 30.0


class ThreadedTestWeb:
    """A TestWeb on its own event loop in a daemon thread; `web.log` is readable from any thread."""

    def __init__(
        self,
        config: TestWebConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: Path | str | None = None,
    ) -> None:
        self.web = TestWeb(config, log_path=log_path)
        self._address = (host, port)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="testweb", daemon=True)

    @property
    def port(self) -> int:
        return self.web.port

    def start(self) -> int:
        """Start serving; returns the bound port once the server accepts connections."""
        self._thread.start()
        if not self._ready.wait(_START_TIMEOUT_S):
            raise RuntimeError("test web thread did not start in time")
        if self._error is not None:
            self._thread.join()
            raise self._error
        return self.port

    def stop(self) -> None:
        """Stop the server and wait for its thread; safe to call twice."""
        loop, stop_requested = self._loop, self._stop_requested
        if loop is not None and stop_requested is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # loop already closed
                loop.call_soon_threadsafe(stop_requested.set)
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_requested = asyncio.Event()
        try:
            await self.web.start(*self._address)
        except BaseException as exc:  # handed to the starting thread
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            await self._stop_requested.wait()
        finally:
            await self.web.stop()


@contextlib.contextmanager
def serve_in_background(
    config: TestWebConfig | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    log_path: Path | str | None = None,
) -> Iterator[TestWeb]:
    """Serve in a background thread for the duration of the block; yields the running TestWeb."""
    threaded = ThreadedTestWeb(config, host=host, port=port, log_path=log_path)
    threaded.start()
    try:
        yield threaded.web
    finally:
        threaded.stop()


def run_in_thread(config: TestWebConfig | None = None) -> tuple[int, Callable[[], None]]:
    """Start serving on a free loopback port in a thread; returns (port, stop)."""
    threaded = ThreadedTestWeb(config)
    return threaded.start(), threaded.stop


@dataclass
class TestWebProcess:
    """A test web running as `python -m archive_testkit.testweb` in a child process."""

    __test__ = False

    process: subprocess.Popen[str]
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cpu_seconds(self) -> float | None:
        """User + system CPU time the process has used so far (Linux only, else None)."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM (flushes the log), then SIGKILL after `timeout`; returns the exit code."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.process.returncode


@contextlib.contextmanager
def serve_in_subprocess(
    config: TestWebConfig | None = None,
    *,
    port: int = 0,
    log_path: Path | str | None = None,
    extra_args: tuple[str, ...] = (),
) -> Iterator[TestWebProcess]:
    """Serve from a separate process (its CPU is not the caller's) for the duration of the block."""
    args = [sys.executable, "-m", "archive_testkit.testweb", "--port", str(port)]
    args += config_to_args(config or TestWebConfig())
    if log_path is not None:
        args += ["--log", str(log_path)]
    with spawn_server([*args, *extra_args], "test web") as running:
        yield running


@contextlib.contextmanager
def spawn_server(command: list[str], what: str = "server") -> Iterator[TestWebProcess]:
    """Run a server that prints a JSON line with its "port" once listening; stop it after the block."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"{what} process exited early with {process.wait()}")
        running = TestWebProcess(process, int(json.loads(line)["port"]))
    except BaseException:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()
        raise
    try:
        yield running
    finally:
        running.stop()
