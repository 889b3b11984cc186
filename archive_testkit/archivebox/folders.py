"""Writing a generated collection's files: each folder made once, an optional mtime per file."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)


class FolderWriter:
    """Writes files under `root` by relative POSIX path.

    Folders are made once along a known tree: os.makedirs' per-call checks dominate when a
    collection has 200k files.
    """

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self._made: set[str] = set()

    def mkdir(self, rel: str) -> None:
        """Create the folder `rel` (and its parents) under the root."""
        if rel in self._made:
            return
        if rel:
            self.mkdir(os.path.dirname(rel))
        os.makedirs(os.path.join(self.root, rel), exist_ok=True)
        self._made.add(rel)

    def write(self, rel: str, data: bytes, *, mtime: datetime | None = None) -> None:
        """Write `data` to `rel`; with `mtime`, give the file that modification time."""
        self.mkdir(os.path.dirname(rel))
        path = os.path.join(self.root, rel)
        fd = os.open(path, _WRITE_FLAGS, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        if mtime is not None:
            stamp = mtime.timestamp()
            os.utime(path, (stamp, stamp))
