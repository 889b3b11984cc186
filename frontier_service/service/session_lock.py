"""The per-session lock both journals hold while a crawler writes them."""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import IO


def lock_session(directory: Path, session_id: str) -> IO[str]:
    """Create `directory` and hold an exclusive lock on `<session_id>.lock` in it.

    Recovery after a crash skips journals whose session lock is still held. Close the
    returned file to release it.
    """
    directory.mkdir(parents=True, exist_ok=True)
    lock: IO[str] = open(directory / f"{session_id}.lock", "a")  # noqa: SIM115
    fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
    return lock
