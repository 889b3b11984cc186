"""The crawl id: which crawl a Redis holds, so a crawler can tell a wiped or foreign Redis.

The id is a uuid made once per crawl name and data dir, kept on disk beside the crawl's
checkpoints (`crawl-id`); `{name}:epoch` in Redis holds it once the Redis state is complete
(set last by a rebuild, or first by a brand new crawl).
"""

from __future__ import annotations

import enum
import os
import uuid
from pathlib import Path

from redis.asyncio import Redis

from archive_pipelines.archive_error import DataDirError
from archive_pipelines.blobstore.local_files import fsync_dir
from frontier_service.frontier.checkpoint import checkpoint_dir
from frontier_service.frontier.keys import FrontierKeys

CRAWL_ID_FILE = "crawl-id"


class EpochState(enum.Enum):
    """What a Redis holds of the crawl, by its epoch key."""

    MATCH = "match"  # our crawl id: complete
    EMPTY = "empty"  # no epoch and no state of this crawl: a fresh or wiped Redis
    MISSING = "missing"  # no epoch but some state: partial loss, or a Redis older than epochs
    FOREIGN = "foreign"  # another crawl's id under this name


def crawl_id_path(root: Path, crawl_name: str) -> Path:
    return checkpoint_dir(root, crawl_name) / CRAWL_ID_FILE


def read_crawl_id(root: Path, crawl_name: str) -> str | None:
    """The crawl's id on disk, or None if it has none yet; DataDirError if the file is damaged."""
    path = crawl_id_path(root, crawl_name)
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise DataDirError(f"{path} does not hold a crawl id ({text[:40]!r}); restore it, or "
                           "delete it to treat Redis as another crawl's") from None


def ensure_crawl_id(root: Path, crawl_name: str, *, joining: str | None = None) -> str:
    """The crawl's id, created (atomically, once, even with racing processes) if it has none:
    `joining` (a crawl other machines run) if given, else a new one."""
    existing = read_crawl_id(root, crawl_name)
    if existing is not None:
        return existing
    path = crawl_id_path(root, crawl_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{CRAWL_ID_FILE}.{uuid.uuid4().hex}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, f"{joining or uuid.uuid4()}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temp, path)  # fails if another process created it first: theirs wins
    except FileExistsError:
        pass
    finally:
        temp.unlink()
    fsync_dir(path.parent)
    created = read_crawl_id(root, crawl_name)
    assert created is not None
    return created


async def check_epoch(redis: Redis, keys: FrontierKeys, crawl_id: str) -> EpochState:
    """Whether Redis holds this crawl's complete state, none, part of it, or another crawl's.

    The seen and visited keys do not count as state: `Frontier.open` creates them.
    """
    value = await redis.get(keys.epoch)
    if value is not None:
        text = value.decode() if isinstance(value, bytes) else str(value)
        return EpochState.MATCH if text == crawl_id else EpochState.FOREIGN
    if await redis.exists(keys.counters, keys.ready, keys.leases):
        return EpochState.MISSING
    cursor = 0
    while True:
        cursor, found = await redis.scan(cursor, match=glob_escape(keys.domain_prefix) + "*",
                                         count=10_000)
        if found:
            return EpochState.MISSING
        if not cursor:
            return EpochState.EMPTY


async def set_epoch(redis: Redis, keys: FrontierKeys, crawl_id: str) -> None:
    """Mark the Redis state as this crawl's and complete."""
    await redis.set(keys.epoch, crawl_id)


def has_disk_state(root: Path, crawl_name: str) -> bool:
    """True if any frontier file or checkpoint exists under the frontier root `root`: an
    empty Redis then needs a rebuild."""
    base = Path(root) / "frontiers"
    try:
        shards = [e.path for e in os.scandir(base) if e.is_dir() and len(e.name) == 2
                  and not e.name.strip("0123456789abcdef")]
    except FileNotFoundError:
        return False
    for shard in shards:
        with os.scandir(shard) as entries:
            if any(e.name.endswith(".frontier") for e in entries):
                return True
    return any(checkpoint_dir(root, crawl_name).glob("*.ckpt"))


def glob_escape(text: str) -> str:
    """`text` as a literal in a Redis SCAN MATCH pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
