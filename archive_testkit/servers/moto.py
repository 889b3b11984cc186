"""moto_server: a real S3 HTTP endpoint in a subprocess (the only S3 server installable here)."""

from __future__ import annotations

import sys
import urllib.request
from typing import Self

from archive_pipelines.server_process import ServerProcess, free_port


class LocalMotoServer(ServerProcess):
    """`python -m moto.server` on a free 127.0.0.1 port, stopped on exit."""

    what = "moto_server"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        """Start on a free port, or on the one it had (a restart: empty, as moto keeps
        nothing)."""
        self.port = self.port or free_port()
        self._launch([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)])
        return self

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/moto-api/", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False
