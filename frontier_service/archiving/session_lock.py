"""The per-session lock both journals hold while a crawler writes them, and how recovery
finds the sessions whose process is gone."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from pathlib import Path

from frontier_service.frontier.folder_locks import lock_session

__all__ = ["dead_sessions", "lock_session"]


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
