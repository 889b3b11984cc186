"""Append-only journal files of one session: generations `{session}.{n:06d}{suffix}` in a
directory, written under the session's lock (`session_lock`)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

from frontier_service.archiving.session_lock import lock_session


class JournalFiles:
    """One open generation at a time; not thread-safe (use from the event loop)."""

    def __init__(self, directory: Path, session_id: str, suffix: str) -> None:
        self.directory = directory
        self.session_id = session_id
        self.suffix = suffix
        self._lock: IO[str] = lock_session(directory, session_id)
        self.generation = 0
        self._fd = self._open(0)

    def path(self, generation: int) -> Path:
        return self.directory / f"{self.session_id}.{generation:06d}{self.suffix}"

    def write(self, data: bytes) -> None:
        """Append `data` to the open generation (one write unless the kernel takes less).

        All or nothing: a write the disk refuses partway (full) is cut off again, so a retry
        never glues its first line onto a torn one (which recovery would then skip)."""
        view = memoryview(data)
        size = os.fstat(self._fd).st_size
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, size)
            raise

    def next_generation(self) -> int:
        """Later writes go to a new file; returns the generation now closed."""
        os.close(self._fd)
        closed = self.generation
        self.generation += 1
        self._fd = self._open(self.generation)
        return closed

    def close_file(self) -> None:
        """No more writes: close the open generation (its file stays)."""
        os.close(self._fd)

    def abandon(self) -> None:
        """Stop writing and release the session, leaving its files for the next run's
        recovery (what they hold could not be handed on)."""
        self.close_file()
        self._lock.close()

    def unlock(self) -> None:
        """Remove the session's lock file and release the lock: nothing is left to recover."""
        with contextlib.suppress(FileNotFoundError):
            (self.directory / f"{self.session_id}.lock").unlink()
        self._lock.close()

    def _open(self, generation: int) -> int:
        return os.open(self.path(generation),
                       os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
