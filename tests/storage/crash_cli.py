"""Subprocess body for crash tests of CLI commands: runs `archive-pipelines ARGS...` and
kills itself (SIGKILL) just before its Nth step of one kind.

    python -m tests.storage.crash_cli KIND N ARGS...

KIND `sql`: a catalog statement or commit; `file`: a file operation (open for writing,
write, fsync, link, rename, unlink, mkdir, symlink); `sql:TEXT`: a catalog statement whose
SQL starts with TEXT (e.g. `sql:INSERT INTO snapshot_file`); `none`: no kill. At a normal exit
it prints `steps sql=<count> file=<count>` (the kill points there are), after the command's
output.
"""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from archive_pipelines.cli.main import main as cli_main

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
FILE_OPERATIONS = ("write", "fsync", "link", "rename", "replace", "unlink", "mkdir", "symlink")


def main() -> None:
    kind, kill_at, args = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    matching = kind.partition(":")[2] if kind.startswith("sql:") else None
    assert kind in ("sql", "file", "none") or matching
    steps: Counter[str] = Counter()

    def step(counted: str) -> None:
        steps[counted] += 1
        if counted == kind and steps[counted] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def on_statement(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        step("sql")
        if matching and statement.lstrip().startswith(matching):
            step(kind)

    def on_commit(*_args: Any) -> None:
        step("sql")

    event.listen(Engine, "before_cursor_execute", on_statement)
    event.listen(Engine, "commit", on_commit)

    def counted(name: str) -> Callable[..., Any]:
        real = getattr(os, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            step("file")
            return real(*args, **kwargs)
        return wrapper

    for name in FILE_OPERATIONS:
        setattr(os, name, counted(name))
    real_open = os.open

    def open_counted(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & WRITE_FLAGS:
            step("file")
        return real_open(path, flags, *args, **kwargs)

    os.open = open_counted
    code = cli_main(args)
    print(f"steps sql={steps['sql']} file={steps['file']}", flush=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
