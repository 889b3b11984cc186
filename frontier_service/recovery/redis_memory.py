"""Redis memory settings the crawl cannot live with, and how a run notices them.

Redis holds the crawl's coordination state; the data dir holds the truth, so whatever
Redis drops can be rebuilt, but a Redis that keeps dropping it rebuilds for ever. An
`allkeys-*` maxmemory-policy evicts any key once maxmemory is reached: refused at start.
A `volatile-*` policy evicts only keys with a TTL, and the crawl's state has none (only the
robots.txt cache does, which is fetched again): accepted, like `noeviction`. Once such a
Redis is full it refuses writes ("OOM command not allowed"), which a run names as the
reason it stops. Everything is read from INFO, which managed Redis services allow where
they often disable CONFIG.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import OutOfMemoryError, RedisError, ResponseError

from archive_pipelines.archive_error import ArchiveError
from frontier_service.frontier.script_guard import FrontierLost

log = logging.getLogger(__name__)

OOM_REPLY = "OOM command not allowed"
# Every message of a Redis that cannot hold the crawl starts so (the CLI shows it as is).
FAILURE_PREFIX = "Redis "
NOTHING_LOST = ("nothing is lost (the data dir holds the crawl): run the crawl again "
                "once Redis can hold it")


class RedisCannotHoldCrawl(ArchiveError, RedisError):
    """Redis evicts the crawl's keys, is out of memory, or keeps losing the crawl's state.

    A RedisError too, so code that waits out Redis trouble treats it as such; the run
    stops on it (`FrontierRecovery.failure`)."""


@dataclass(frozen=True)
class RedisMemory:
    """Redis's memory limit and what it did about it, from INFO."""

    maxmemory: int
    policy: str
    used: int
    evicted_keys: int
    oom_errors: int  # replies "OOM ..." so far (INFO errorstats; 0 before Redis 6.2)

    @property
    def evicts_any_key(self) -> bool:
        return self.maxmemory > 0 and self.policy.startswith("allkeys-")

    @property
    def settings(self) -> str:
        limit = human_bytes(self.maxmemory) if self.maxmemory else "0 (none)"
        return f"maxmemory {limit}, maxmemory-policy {self.policy}"


def human_bytes(count: int) -> str:
    for unit, size in (("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)):
        if count >= size:
            return f"{count / size:.3g}{unit}"
    return f"{count}b"


def is_oom(exc: BaseException) -> bool:
    """Whether `exc` is Redis refusing a write for want of memory."""
    return isinstance(exc, OutOfMemoryError) or (
        isinstance(exc, ResponseError) and str(exc).startswith(OOM_REPLY))


async def read_memory(redis: Redis) -> RedisMemory | None:
    """Redis's memory settings and counters; None if INFO is not allowed."""
    try:
        memory = await redis.info("memory")
        stats = await redis.info("stats")
        errors = await redis.info("errorstats")
    except ResponseError as exc:  # a managed Redis may rename or disable INFO
        log.debug("INFO not available (%s): Redis memory settings not checked", exc)
        return None
    return RedisMemory(int(memory.get("maxmemory", 0)), str(memory.get("maxmemory_policy", "")),
                       int(memory.get("used_memory", 0)), int(stats.get("evicted_keys", 0)),
                       _error_count(errors.get("errorstat_OOM")))


def _error_count(stat: Any) -> int:
    if isinstance(stat, dict):
        return int(stat.get("count", 0))
    if isinstance(stat, str) and stat.startswith("count="):  # an unparsed "count=N"
        return int(stat.removeprefix("count=").split(",")[0])
    return 0


async def refuse_evicting_redis(redis: Redis, url: str) -> None:
    """Before a command writes to the frontier: RedisCannotHoldCrawl (one line) if this
    Redis would evict the crawl's keys once full."""
    memory = await read_memory(redis)
    if memory is None:
        return
    if memory.evicts_any_key:
        raise RedisCannotHoldCrawl(
            f"Redis at {url} evicts keys when full ({memory.settings}) and would lose the "
            "crawl's state: set maxmemory-policy noeviction (or maxmemory 0) on it, or use "
            "another Redis")
    if memory.maxmemory:
        log.info("Redis %s: once full, writes fail and the crawl stops (only its robots.txt "
                 "cache may be evicted)", memory.settings)


class RedisMemoryWatch:
    """Evictions and out-of-memory replies since the crawl started (INFO counters)."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.baseline: RedisMemory | None = None

    async def start(self) -> None:
        """Take the counters' values at start: only later ones count."""
        self.baseline = await read_memory(self.redis)

    async def problem(self, exc: BaseException | None = None) -> str | None:
        """Why Redis cannot hold the crawl (evicted keys, out of memory), or None.

        `exc`: an error just seen, named if it is an OOM reply (counted or not)."""
        try:
            now = await read_memory(self.redis)
        except (RedisError, OSError):
            now = None
        if now is None or self.baseline is None:
            if exc is not None and is_oom(exc):
                return (f"Redis is out of memory ({OOM_REPLY}: {exc}): raise its maxmemory; "
                        f"{NOTHING_LOST}")
            return None
        evicted = now.evicted_keys - self.baseline.evicted_keys
        # volatile-*: only keys with a TTL go, of the crawl's only the robots.txt cache.
        if evicted > 0 and not now.policy.startswith("volatile-"):
            return (f"Redis evicted {evicted} keys ({now.settings}): it dropped the crawl's "
                    "state to free memory; set maxmemory-policy noeviction (or maxmemory 0); "
                    f"{NOTHING_LOST}")
        ooms = now.oom_errors - self.baseline.oom_errors
        if ooms > 0 or (exc is not None and is_oom(exc)):
            return (f"Redis is out of memory ({OOM_REPLY}, {max(ooms, 1)} times; "
                    f"{now.settings}, {human_bytes(now.used)} used): raise its maxmemory; "
                    f"{NOTHING_LOST}")
        return None


@contextlib.asynccontextmanager
async def memory_guard(redis: Redis, url: str, crawl_name: str, *,
                       writing: bool) -> AsyncIterator[None]:
    """Around a command on the crawl's Redis: one that writes is refused on a Redis that
    evicts; an out-of-memory reply or a lost crawl state inside becomes one line saying so."""
    if writing:
        await refuse_evicting_redis(redis, url)
    watch = RedisMemoryWatch(redis)
    await watch.start()
    try:
        yield
    except RedisCannotHoldCrawl:
        raise
    except (FrontierLost, ResponseError) as exc:
        cause = await watch.problem(exc)
        if cause is None and isinstance(exc, FrontierLost):
            cause = (f"Redis lost the state of crawl {crawl_name!r} meanwhile (wiped, restarted "
                     "empty or replaced): run the command again (the data dir holds the crawl)")
        if cause is None:
            raise
        raise RedisCannotHoldCrawl(cause) from None
