"""What the embedded Redis's files need: which redis-server (path, version) wrote them.

The record (`redis-server.json`, beside the files) is rewritten at every start by the
server that then owns them. Files from before the record are judged by their format:
a multi-part AOF (`appendonlydir/`) needs Redis 7.0, an RDB file names its format version.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.embedded_redis.binaries import RedisServerBinary, parse_version

RECORD = "redis-server.json"
# The oldest Redis that reads each RDB format version (the newer ones only).
_RDB_FORMATS = {10: (7, 0), 11: (7, 2), 12: (7, 4)}


class EmbeddedRedisRefused(ArchiveError):
    """The embedded Redis's files cannot be served by the redis-server available here."""


@dataclass(frozen=True)
class FilesNeed:
    """The oldest Redis (major, minor) that reads the files, and who says so."""

    version: tuple[int, int]
    written_by: str  # "redis-server 7.0.15 (/usr/bin/redis-server)", or the format seen


def read_record(workdir: Path) -> RedisServerBinary | None:
    """The redis-server that last ran on these files; None if none is recorded."""
    path = workdir / RECORD
    try:
        data = json.loads(path.read_text())
        version = parse_version(f"v={data['version']}")
        if version is None:
            raise ValueError(data["version"])
        return RedisServerBinary(str(data["path"]), version)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EmbeddedRedisRefused(
            f"{path} is damaged ({exc}): it says which redis-server wrote the embedded "
            "Redis's files; delete it if the newest redis-server here can read them") from None


def write_record(workdir: Path, binary: RedisServerBinary) -> None:
    """Record `binary` as the server of these files (atomically: a torn record is none)."""
    path = workdir / RECORD
    temp = path.with_name(f".{RECORD}.{os.getpid()}.tmp")
    temp.write_text(json.dumps({"path": binary.path, "version": binary.version_text}) + "\n")
    os.replace(temp, path)


def files_need(workdir: Path, record: RedisServerBinary | None) -> FilesNeed | None:
    """What reading the files in `workdir` takes; None if any redis-server reads them."""
    if record is not None:
        return FilesNeed(record.version[:2],
                         f"redis-server {record.version_text} ({record.path})")
    if (workdir / "appendonlydir").is_dir():
        return FilesNeed((7, 0), f"Redis 7.0 or newer (a multi-part AOF in "
                                 f"{workdir / 'appendonlydir'})")
    rdb = rdb_format(workdir / "dump.rdb")
    if rdb is not None and rdb in _RDB_FORMATS:
        major, minor = _RDB_FORMATS[max(f for f in _RDB_FORMATS if f <= rdb)]
        return FilesNeed((major, minor), f"Redis {major}.{minor} or newer (RDB format {rdb})")
    return None


def rdb_format(path: Path) -> int | None:
    """The format version an RDB file's header names ("REDIS0010" -> 10), or None."""
    try:
        with path.open("rb") as file:
            header = file.read(9)
    except OSError:
        return None
    if header[:5] != b"REDIS" or not header[5:].isdigit():
        return None
    return int(header[5:])


def refuse_older(workdir: Path, need: FilesNeed | None, chosen: RedisServerBinary) -> None:
    """EmbeddedRedisRefused if `chosen` is older than the files in `workdir` need.

    Major and minor only: file formats change with minor releases, not with patches."""
    if need is None or chosen.version[:2] >= need.version:
        return
    wanted = ".".join(map(str, need.version))
    raise EmbeddedRedisRefused(
        f"the embedded Redis's files in {workdir} were written by {need.written_by}, and the "
        f"newest redis-server here, {chosen.version_text} ({chosen.path}), cannot read them: "
        f"install redis-server {wanted} or newer (Debian: apt-get install redis-server) or "
        "put it on PATH, then run again; nothing was started")

