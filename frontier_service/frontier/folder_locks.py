"""Locks in a folder: per-session flocks (held while a session runs, told live or dead by
others), the crawl's rebuild lock, and short mutexes.

The page and link journals hold the same session locks (archiving/session_lock.py, which
imports `lock_session` from here: the frontier is the lower layer).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

REBUILD_MUTEX = "rebuild.mutex"  # mutexes are not `*.lock`: those are sessions


def live_sessions(directory: Path) -> list[str]:
    """The sessions in `directory` whose lock a live process holds (changes nothing)."""
    live = []
    for lock_path in sorted(Path(directory).glob("*.lock")):
        try:
            with open(lock_path, "a") as lock:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            live.append(lock_path.name.removesuffix(".lock"))
        except FileNotFoundError:
            continue
    return live


def lock_rebuild(directory: Path) -> IO[str]:
    """Wait for and hold the crawl's rebuild lock (one Redis rebuild at a time); close the
    returned file to release it."""
    Path(directory).mkdir(parents=True, exist_ok=True)
    lock: IO[str] = open(Path(directory) / REBUILD_MUTEX, "a")  # noqa: SIM115
    fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
    return lock


def lock_session(directory: Path, session_id: str) -> IO[str]:
    """Hold an exclusive flock on `directory/{session_id}.lock` (made if missing); close the
    returned file to release it."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{session_id}.lock"
    while True:
        lock: IO[str] = open(path, "a")  # noqa: SIM115
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:  # a merge may have removed the file between our open and flock
            if os.stat(path).st_ino == os.fstat(lock.fileno()).st_ino:
                return lock
        except FileNotFoundError:
            pass
        lock.close()


def dead_sessions(directory: Path) -> list[str]:
    """Sessions whose lock no process holds; their lock files are removed."""
    dead = []
    for lock_path in sorted(directory.glob("*.lock")):
        with open(lock_path, "a") as lock:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            dead.append(lock_path.name.removesuffix(".lock"))
            lock_path.unlink()
    return dead


@contextlib.contextmanager
def mutex(directory: Path, name: str, *, shared: bool) -> Iterator[None]:
    """An flock on `directory/name` for the length of a `with` block."""
    with open(directory / name, "a") as file:
        fcntl.flock(file.fileno(), fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
