"""Subprocess body for fault tests: runs `archive-pipelines ARGS...` and stops a PostgreSQL
server (immediate shutdown, as a crash or `pg_ctl stop -m immediate`) just before the
command's Nth step of one kind, then lets the command carry on into the failure.

    python -m tests.storage.stop_postgres_cli PG_DATA_DIR KIND N ARGS...

The steps are `tests.storage.crash_cli`'s (KIND `sql`, `file`, `sql:TEXT`, `none`); where
that module kills itself, this one stops the server whose data folder is PG_DATA_DIR and
returns once the server and all its backends are gone (its postmaster.pid removed).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from tests.storage import crash_cli

real_kill = os.kill


def stop_postgres(data_dir: Path, *, timeout: float = 30.0) -> None:
    """SIGQUIT to the postmaster (immediate shutdown: no checkpoint, backends end at once);
    waits until it has removed its postmaster.pid, which it does after its last backend."""
    pid_file = data_dir / "postmaster.pid"
    postmaster = int(pid_file.read_text().splitlines()[0])
    real_kill(postmaster, signal.SIGQUIT)
    deadline = time.monotonic() + timeout
    while pid_file.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"postgres (pid {postmaster}) did not stop within {timeout:.0f}s")
        time.sleep(0.02)


def main() -> None:
    data_dir = Path(sys.argv.pop(1))

    def kill_or_stop(pid: int, sig: int) -> None:
        if pid == os.getpid() and sig == signal.SIGKILL:  # crash_cli's kill point
            stop_postgres(data_dir)
            print("(postgres stopped here)", flush=True)  # stdout: stderr is the command's
        else:
            real_kill(pid, sig)

    os.kill = kill_or_stop
    crash_cli.main()


if __name__ == "__main__":
    main()
