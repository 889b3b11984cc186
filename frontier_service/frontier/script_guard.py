"""FrontierLost: Redis no longer holds the crawl's state, and how a script says so."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from redis.commands.core import AsyncScript
from redis.exceptions import RedisError, ResponseError

# The error every guarded Lua script answers with once the state is gone.
LOST_REPLY = "NOEPOCH"


class FrontierLost(RedisError):
    """Redis lost the crawl's state (wiped, restarted without persistence, replaced):
    nothing was changed; rebuild it from disk, then retry."""


GuardedScript = Callable[..., Awaitable[Any]]


def guarded(script: AsyncScript) -> GuardedScript:
    """`script` raising FrontierLost instead of the ResponseError its guard replies with."""

    async def call(*, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            return await script(keys=keys, args=args)
        except ResponseError as exc:
            if LOST_REPLY in str(exc):
                raise FrontierLost(str(exc)) from None
            raise

    return call
