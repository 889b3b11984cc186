"""The background loop of a write buffer (visited records, discovered links): flush on a
timer, or as soon as the buffer says it is full, until the crawl has finished."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from redis.exceptions import RedisError


async def flush_until(finished: asyncio.Event, flush: Callable[[], Awaitable[object]], *,
                      full: asyncio.Event, every_s: float, log: logging.Logger,
                      failure: str, on_error: Callable[[Exception], object] | None = None
                      ) -> None:
    """Call `flush` every `every_s`, or when `full` is set, until `finished`. A failed flush
    (Redis trouble) is logged as `failure` and retried next round: the crawl goes on.
    `on_error` hears of each failure first (the service stops on a full disk)."""
    while not finished.is_set():
        waiter = asyncio.ensure_future(full.wait())
        try:
            await asyncio.wait([waiter], timeout=every_s)
        finally:
            waiter.cancel()
        try:
            await flush()
        except (RedisError, OSError) as exc:  # Redis away: one line, not a traceback a round
            if on_error is not None:
                on_error(exc)
            log.warning("%s: %s", failure, exc)
        except Exception as exc:
            if on_error is not None:
                on_error(exc)
            log.exception(failure)
