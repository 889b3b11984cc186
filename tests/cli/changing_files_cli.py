"""Subprocess body for `ingest` tests: runs `archive-pipelines ARGS...` while a concurrent
writer changes the folder it ingests, at one fixed moment: when the ingest first opens a
file of FOLDER to read it, that file grows (it changes while it is hashed) and VANISH is
removed (listed already, it is gone by its turn).

    python -m tests.cli.changing_files_cli FOLDER VANISH ARGS...

The changed file's path is printed on stderr as `changed PATH`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from archive_pipelines.cli.main import main as cli_main

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def main() -> None:
    folder, vanish, args = sys.argv[1].rstrip("/") + "/", sys.argv[2], sys.argv[3:]
    real_open = os.open
    changed: list[str] = []

    def open_then_change(path: Any, flags: int, *rest: Any, **kwargs: Any) -> int:
        fd = real_open(path, flags, *rest, **kwargs)
        name = os.fspath(path)
        if not changed and isinstance(name, str) and name.startswith(folder) \
                and not flags & WRITE_FLAGS:
            changed.append(name)
            writer = real_open(name, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(writer, b"a line written while the ingest read this file\n")
            finally:
                os.close(writer)
            os.unlink(vanish)
            print(f"changed {name}", file=sys.stderr, flush=True)
        return fd

    os.open = open_then_change
    sys.exit(cli_main(args))


if __name__ == "__main__":
    main()
