"""ServerProcess: a child that dies or never answers is a clear error, and stop always cleans up."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Self

import pytest

from archive_pipelines.server_process import ServerProcess, free_port


class Sleeper(ServerProcess):
    """A Python child that answers once `ready` exists, or exits at once with `exit_at_once`."""

    what = "sleeper"
    startup_timeout = 2.0
    stop_timeout = 5.0

    def __init__(self, ready: Path, *, exit_at_once: bool = False) -> None:
        super().__init__()
        self.ready, self.exit_at_once = ready, exit_at_once
        self.cleaned = 0

    def start(self) -> Self:
        self.port = free_port()
        code = "pass" if self.exit_at_once else "import time; time.sleep(60)"
        self._launch([sys.executable, "-c", code])
        return self

    def _answers(self) -> bool:
        return self.ready.exists()

    def _cleanup(self) -> None:
        self.cleaned += 1


def test_a_server_that_answers_is_running_until_stopped(tmp_path: Path) -> None:
    (tmp_path / "ready").touch()
    with Sleeper(tmp_path / "ready") as server:
        assert server.running() and server.port > 0
    assert not server.running() and server.cleaned == 1
    server.stop()  # a second stop is harmless
    assert server.cleaned == 2


def test_early_death_and_silence_are_named_errors(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="sleeper exited during startup"):
        Sleeper(tmp_path / "never", exit_at_once=True).start()
    server = Sleeper(tmp_path / "never")
    with pytest.raises(RuntimeError, match="sleeper did not become ready within 2s"):
        server.start()
    server.stop()
    assert not server.running()
