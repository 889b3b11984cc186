"""Subprocess body for the compaction crash test: `compact_sessions` on an ingested data dir
(its SQLite catalog inside), which kills itself (SIGKILL) right after its Nth step of one kind.

    python -m tests.captures.crash_compact DATA_DIR KIND N

KIND `sql`: a catalog statement executed, or a transaction committed (the kill then falls
after the commit); `file`: a file operation (open for writing, fsync, link, rename,
replace, unlink, mkdir, rmdir); `write`: a write to a file (the compaction's buffered
writes of the compacted file and index, and the blob store's os.write calls); `none`: no
kill. At a normal exit it prints the report as JSON, then `steps sql=<n> file=<n> write=<n>`
(the kill points there are).
"""

from __future__ import annotations

import builtins
import json
import os
import signal
import sys
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

import archive_pipelines.captures.compaction as compaction
from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
FILE_OPERATIONS = ("fsync", "link", "rename", "replace", "unlink", "mkdir", "rmdir")
KINDS = ("sql", "file", "write")


class _CountedFile:
    """A file object opened for writing whose writes are steps."""

    def __init__(self, handle: Any, step: Callable[[str], None]) -> None:
        self._handle = handle
        self._step = step

    def write(self, data: bytes) -> int:
        written: int = self._handle.write(data)
        self._step("write")
        return written

    def __enter__(self) -> _CountedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


def main() -> None:
    data_dir, kind, kill_at = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    assert kind in (*KINDS, "none")
    steps: Counter[str] = Counter()

    def step(counted: str) -> None:
        steps[counted] += 1
        if counted == kind and steps[counted] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def after_statement(*_args: Any, **_kwargs: Any) -> None:
        step("sql")

    event.listen(Engine, "after_cursor_execute", after_statement)
    event.listen(Session, "after_commit", after_statement)

    def counted(name: str, kind: str) -> Callable[..., Any]:
        real = getattr(os, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            step(kind)
            return result
        return wrapper

    for name in FILE_OPERATIONS:
        setattr(os, name, counted(name, "file"))
    os.write = counted("write", "write")
    real_os_open = os.open

    def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real_os_open(path, flags, *args, **kwargs)
        if flags & WRITE_FLAGS:
            step("file")
        return fd

    os.open = os_open

    def compaction_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = builtins.open(file, mode, *args, **kwargs)  # noqa: SIM115 (the caller closes it)
        if not any(c in mode for c in "wax+"):
            return handle
        step("file")
        return _CountedFile(handle, step)

    compaction.open = compaction_open  # type: ignore[attr-defined]  # shadows the builtin there

    with open_storage(Settings(data_dir=data_dir)) as parts:
        store = CapturePrimary(parts.primary.store, parts.primary.store_id, parts.views.farm)
        report = compaction.compact_sessions(parts.catalog, store, data_dir,
                                             older_than=timedelta(0))
        parts.catalog.engine.dispose()
    print(json.dumps(report.to_dict()), flush=True)
    print("steps " + " ".join(f"{k}={steps[k]}" for k in KINDS), flush=True)
    sys.exit(1 if report.failed else 0)


if __name__ == "__main__":
    main()
