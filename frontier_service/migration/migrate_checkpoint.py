"""How far a migration got: per table the last key done, and the frontier batch in flight.

`{frontier root}/frontiers/migrations/{crawl}.json`, replaced whole (temp file, fsync,
rename, fsync of the folder) only after the batch's effects are durable: its lines synced
to disk, the seen filter, visited records and domain state written to Redis.

Frontier batches go in windows of a few (migrate_frontier.py), and each batch extends
`pending` before it touches the seen filter: the window's key range (from the last key
synced) and the frontier files it may append to (with their sizes before it). A migration
killed while a window ran re-reads exactly that range on the next start, as one batch, and
since the seen filter may hold its URLs already, takes a URL as new only if neither its
domain's file nor the visited store has it (both exact): no line is written twice and none
is lost, wherever the kill fell (between the seen filter and the appends, between the
appends and the sync, between the sync and the checkpoint ...).
"""

from __future__ import annotations

import fcntl
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from archive_pipelines.archive_error import ArchiveError
from frontier_service.frontier.checkpoint import checkpoint_dir, write_atomically

VERSION = 1


class MigrationBusy(ArchiveError):
    """Another migration of the same crawl is running."""


@dataclass
class TableProgress:
    after: str | None = None  # every row with a key up to this one is migrated
    done: bool = False
    rows: int = 0


@dataclass
class PendingBatch:
    """A frontier batch that may have appended lines: rows with after < key <= through."""

    after: str | None
    through: str
    sizes: dict[str, int]  # the files it may append to, and their sizes (bytes) before


@dataclass
class MigrationCheckpoint:
    crawl: str
    source: str  # host:port/dbname of the PostgreSQL frontier
    tables: dict[str, TableProgress] = field(default_factory=dict)
    pending: PendingBatch | None = None
    counts: dict[str, int] = field(default_factory=dict)
    finished: bool = False

    def table(self, name: str) -> TableProgress:
        return self.tables.setdefault(name, TableProgress())

    def count(self, name: str, amount: int) -> None:
        self.counts[name] = self.counts.get(name, 0) + amount

    def to_json(self) -> bytes:
        return json.dumps({"version": VERSION, **asdict(self)}, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> MigrationCheckpoint:
        raw: dict[str, Any] = json.loads(data)
        if raw.get("version") != VERSION:
            raise ValueError(f"migration checkpoint version {raw.get('version')}")
        pending = raw.get("pending")
        return cls(crawl=raw["crawl"], source=raw["source"],
                   tables={k: TableProgress(**v) for k, v in raw["tables"].items()},
                   pending=PendingBatch(**pending) if pending else None,
                   counts=dict(raw["counts"]), finished=bool(raw["finished"]))


def migrations_dir(root: Path) -> Path:
    return Path(root) / "frontiers" / "migrations"


def checkpoint_path(root: Path, crawl_name: str) -> Path:
    """Beside the crawl's offset checkpoints' folder name: the crawl name made safe."""
    return migrations_dir(root) / f"{checkpoint_dir(root, crawl_name).name}.json"


def load(path: Path) -> MigrationCheckpoint | None:
    """The checkpoint, or None if the migration never started; ArchiveError if damaged."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return MigrationCheckpoint.from_json(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise ArchiveError(f"the migration checkpoint {path} is damaged ({exc}); the "
                           "migration cannot resume from it") from None


def save(path: Path, checkpoint: MigrationCheckpoint) -> None:
    """Replace the checkpoint atomically and durably."""
    save_bytes(path, checkpoint.to_json())


def save_bytes(path: Path, data: bytes) -> None:
    """`save` of a checkpoint's to_json() (taken where nothing changes it meanwhile)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, data)


def lock_migration(path: Path) -> IO[str]:
    """Hold the crawl's migration lock (close the file to release it); MigrationBusy if
    another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock: IO[str] = open(path.with_suffix(".mutex"), "a")  # noqa: SIM115
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise MigrationBusy(f"another migration of this crawl is running ({path})") from None
    return lock
