"""Free ports and readiness polling."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable


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
