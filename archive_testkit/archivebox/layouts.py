"""The collection layouts `generate_collection` can write, each with its own options."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Aged07:
    """A collection that lived through 0.4, 0.6 and 0.7 and was last written by ArchiveBox 0.7.2.

    Every folder has 0.7's index.json, index.html and extractor outputs, index.sqlite3 the
    Django schema 0.7.2 ends with; see `archive_testkit.archivebox.aged07`.
    `write_index_json=False` leaves out every folder's index.json; `with_sqlite=False` leaves
    out index.sqlite3; `orphans` folders (at most about a quarter of the snapshots) repeat a
    live snapshot's URL at an older timestamp without a SQLite row.
    """

    files_per_snapshot: int = 50
    with_sqlite: bool = True
    write_index_json: bool = True
    orphans: int = 0


@dataclass(frozen=True)
class ReleaseMix:
    """Folders in the index.json shape of each of `releases` (0.4 to 0.9-dev), in turn.

    Extra folders: `broken` (cycling missing index.json, truncated JSON, a `javascript:` url),
    `duplicates` (exact copies of a snapshot under another folder name) and, with
    `with_sqlite`, `sqlite_only` folders without index.json that the database knows (default:
    1 per 50). index.sqlite3 uses the schema of the newest release; see
    `archive_testkit.archivebox.releases`.
    """

    releases: Sequence[str] = ("0.4", "0.7", "0.8")
    files_per_snapshot: int = 10
    with_sqlite: bool = False
    sqlite_only: int | None = None
    shared_asset_fraction: float = 0.3
    broken: int = 0
    duplicates: int = 0
    binary_size: int = 2048
