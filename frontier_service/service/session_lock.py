"""The per-session lock both journals hold while a crawler writes them, and how recovery
finds the sessions whose process is gone."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def lock_session(directory: Path, session_id: str) -> IO[str]:
    """Create `directory` and hold an exclusive lock on `<session_id>.lock` in it.

    Recovery after a crash skips journals whose session lock is still held. Close the
    returned file to release it.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{session_id}.lock"
    while True:
        lock: IO[str] = open(path, "a")  # noqa: SIM115
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        # Another process's recovery may have taken the file between our open and flock, and
        # removed it: a lock on a removed file protects nothing, so lock the new one.
        try:
            if os.stat(path).st_ino == os.fstat(lock.fileno()).st_ino:
                return lock
        except FileNotFoundError:
            pass
        lock.close()


def dead_sessions(directory: Path) -> Iterator[str]:
    """The ids of the sessions in `directory` whose lock no live process holds.

    Each session stays locked while the loop body recovers its journals; once the body is
    done the lock file is removed (not when the body raises: a later recovery retries).
    """
    for lock_path in sorted(directory.glob("*.lock")):
        session_id = lock_path.name.removesuffix(".lock")
        with open(lock_path, "a") as lock:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live process owns this session
            yield session_id
            lock_path.unlink()
