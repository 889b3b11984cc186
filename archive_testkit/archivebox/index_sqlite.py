"""Creating an ArchiveBox `index.sqlite3`: a schema script and its rows in one transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

SQLITE_NAME = "index.sqlite3"


def write_index_sqlite(path: Path, schema: str, fill: Callable[[sqlite3.Connection], None]) -> None:
    """Create `path` with the `schema` script, then let `fill` insert the rows."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA synchronous = OFF")  # a fixture: no need to wait for the disk
        with conn:
            conn.executescript(schema)
            fill(conn)
    finally:
        conn.close()
