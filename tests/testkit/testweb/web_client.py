"""A small test web configuration and a client that reaches its hosts by name."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp

from archive_testkit.testweb import TestWebConfig, TestWebResolver

# Every trait on several hosts; traps quick enough for unit tests.
SMALL = TestWebConfig(
    seed=7,
    hosts=40,
    pages_per_host=60,
    special_fraction=0.5,
    trap_fraction=0.3,
    dead_fraction=0.15,
    garbage_robots_fraction=0.1,
    crawl_delay_fraction=0.3,
    huge_robots_bytes=300_000,
    slow_delay_s=0.3,
    huge_body_bytes=20_000_000,
)


@dataclass
class Fetched:
    status: int
    headers: dict[str, str]
    body: bytes
    history: list[int]


def session(port: int) -> aiohttp.ClientSession:
    """A client session that sends *.test names to the test web on `port`."""
    connector = aiohttp.TCPConnector(resolver=TestWebResolver(port))
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=10))


async def get(
    client: aiohttp.ClientSession, url: str, *, follow: bool = False, **kwargs: Any
) -> Fetched:
    async with client.get(url, allow_redirects=follow, **kwargs) as response:
        return Fetched(
            response.status,
            dict(response.headers),
            await response.read(),
            [step.status for step in response.history],
        )


def fetch(port: int, url: str, *, follow: bool = False, **kwargs: Any) -> Fetched:
    """GET one URL from the test web, synchronously."""

    async def one() -> Fetched:
        async with session(port) as client:
            return await get(client, url, follow=follow, **kwargs)

    return asyncio.run(one())
