"""The crawl's Redis: a URL, or "embedded" (a private persistent redis-server under <data>/redis,
run by the newest redis-server here that can read its files: archive_pipelines.embedded_redis).

The embedded server belongs to one process at a time (an flock on <data>/redis/owner.lock).
Another crawler command started meanwhile (`seed`, `stats`) finds the owner's port in
<data>/redis/endpoint.json and connects to it instead of starting a second server on the
same files.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

from redis.asyncio import BlockingConnectionPool, Redis
from redis.exceptions import RedisError

from archive_pipelines.archive_error import ArchiveError
from archive_pipelines.embedded_redis import EmbeddedRedis

_ENDPOINT = "endpoint.json"
_LOCK = "owner.lock"


class RedisUnavailable(ArchiveError):
    """Redis cannot be reached or started."""


async def ping(client: Redis, url: str) -> None:
    try:
        await asyncio.wait_for(client.ping(), 5.0)
    except (RedisError, OSError, TimeoutError) as exc:
        raise RedisUnavailable(f"cannot reach Redis at {url}: {exc or type(exc).__name__}") from None


@contextlib.asynccontextmanager
async def open_redis(url: str, data_dir: Path) -> AsyncIterator[tuple[Redis, str]]:
    """A connected client and the URL it reached (the embedded server's, when embedded)."""
    with contextlib.ExitStack() as stack:
        if url == "embedded":
            url = await asyncio.to_thread(_embedded_url, data_dir / "redis", stack)
        # Many workers share few connections: wait for a free one instead of failing.
        pool = BlockingConnectionPool.from_url(url, max_connections=64, timeout=30,
                                               socket_connect_timeout=5, health_check_interval=30)
        client = Redis(connection_pool=pool)
        try:
            await ping(client, url)
            yield client, url
        finally:
            await client.aclose()
            await pool.disconnect()


def _embedded_url(workdir: Path, stack: contextlib.ExitStack) -> str:
    """Start the embedded server (registering its stop on `stack`), or find the running one."""
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        lock: IO[str] = stack.enter_context(open(workdir / _LOCK, "a+"))  # noqa: SIM115
    except OSError as exc:
        raise RedisUnavailable(f"cannot use {workdir} for the embedded Redis: {exc}") from None
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return _running_endpoint(workdir)
    try:
        server = EmbeddedRedis(workdir).start()
    except (RuntimeError, OSError, RedisError) as exc:
        raise RedisUnavailable(f"cannot start the embedded redis-server in {workdir}: {exc}") from None
    endpoint = workdir / _ENDPOINT
    endpoint.write_text(json.dumps({"url": server.url, "pid": os.getpid()}))

    def stop() -> None:
        with contextlib.suppress(FileNotFoundError):
            endpoint.unlink()
        server.stop()

    stack.callback(stop)
    return server.url


def _running_endpoint(workdir: Path) -> str:
    try:
        return str(json.loads((workdir / _ENDPOINT).read_text())["url"])
    except (OSError, ValueError, KeyError):
        raise RedisUnavailable(
            f"the embedded Redis in {workdir} is starting or stopping; try again") from None
