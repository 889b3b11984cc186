"""moto_server: a real S3 HTTP endpoint in a subprocess (the only S3 server installable here)."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from types import TracebackType

from archive_pipelines.services.ports import free_port, wait_until


class LocalMotoServer:
    """`python -m moto.server` on a free 127.0.0.1 port, stopped on exit."""

    def __init__(self) -> None:
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LocalMotoServer:
        self.port = free_port()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_until(self._answers, timeout=30, what="moto_server",
                   alive=lambda: self._proc is not None and self._proc.poll() is None)
        return self

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/moto-api/", timeout=1) as response:
                return bool(response.status == 200)
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

    def __enter__(self) -> LocalMotoServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
