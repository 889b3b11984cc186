"""The fetcher's idle keep-alive cap: fetching many hosts keeps at most the cap of sockets open."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator

import pytest

from archive_testkit.testweb import TestWebConfig, TestWebProcess, hosts_where, serve_in_subprocess
from frontier_service.fetch.bounded_connector import BoundedIdleConnector
from tests.frontier_service.fetch.web import make_fetcher

MANY = TestWebConfig(seed=3, hosts=160, pages_per_host=5, dead_fraction=0.0, trap_fraction=0.0,
                     special_fraction=0.0)
HOSTS = hosts_where(MANY, lambda t: t.alive)


@pytest.fixture(scope="module")
def many_hosts() -> Iterator[TestWebProcess]:
    """The web in its own process, so that this process's sockets are the fetcher's only."""
    with serve_in_subprocess(MANY) as web:
        yield web


def open_sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed since listed
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return count


def fetch_every_host(port: int, max_idle: int) -> tuple[int, int, int]:
    """(sockets open after, idle pooled, pages ok) for one fetch of each host's home page,
    32 at a time, the fetcher still open."""

    async def main() -> tuple[int, int, int]:
        before = open_sockets()
        async with make_fetcher(port, max_idle_connections=max_idle, connection_limit=0) as fetcher:
            gate = asyncio.Semaphore(32)

            async def one(host: str) -> bool:
                async with gate:
                    return (await fetcher.fetch(f"http://{host}/")).ok

            ok = sum(await asyncio.gather(*(one(host) for host in HOSTS)))
            return open_sockets() - before, fetcher.idle_connections, ok

    return asyncio.run(main())


def test_idle_connections_stay_under_the_cap(many_hosts: TestWebProcess) -> None:
    sockets, idle, ok = fetch_every_host(many_hosts.port, max_idle=20)
    assert ok == len(HOSTS) > 100
    assert idle <= 20
    assert sockets <= 20


def test_without_a_low_cap_every_host_keeps_its_socket(many_hosts: TestWebProcess) -> None:
    """The counterpart: the sockets counted above are the pool's, and the cap is what closes them."""
    sockets, idle, ok = fetch_every_host(many_hosts.port, max_idle=10_000)
    assert ok == len(HOSTS)
    assert idle == sockets >= len(HOSTS) - 5


def test_no_idle_connections_kept_with_a_cap_of_zero(many_hosts: TestWebProcess) -> None:
    sockets, idle, ok = fetch_every_host(many_hosts.port, max_idle=0)
    assert ok == len(HOSTS)
    assert (idle, sockets) == (0, 0)


@pytest.mark.unit
def test_a_negative_cap_is_refused() -> None:
    async def build() -> None:
        BoundedIdleConnector(max_idle=-1)

    with pytest.raises(ValueError, match="max_idle must not be negative"):
        asyncio.run(build())
