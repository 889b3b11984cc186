"""Helpers shared by the frontier tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from redis.asyncio import Redis

from frontier_service.frontier.frontier import Frontier, FrontierConfig


@asynccontextmanager
async def connect(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


@asynccontextmanager
async def open_frontier(redis_url: str, root: Path, name: str,
                        **config: object) -> AsyncIterator[Frontier]:
    """A Frontier on its own connection; small filters unless the test asks otherwise."""
    settings: dict[str, object] = {"seen_capacity": 100_000, "visited_expected": 10_000}
    settings.update(config)
    async with connect(redis_url) as client:
        frontier = await Frontier(client, root, FrontierConfig(name=name, **settings)).open()  # type: ignore[arg-type]
        try:
            yield frontier
        finally:
            frontier.close()
