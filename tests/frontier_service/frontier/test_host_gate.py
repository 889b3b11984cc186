"""Host gates against a real redis-server: two crawls of one host take turns, each starting
no sooner than the last holder's release allowed; a dead holder's gate frees with its lease."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest
from redis.asyncio import Redis

from frontier_service.frontier.state import FrontierState, Release, Renewal, Reschedule
from tests.frontier_service.frontier.helpers import connect
from tests.helpers.crawls import delete_keys

NOW = 1_800_000_000.0
HOST = "shared.example"


@pytest.fixture
def gates(redis_url: str) -> Iterator[str]:
    """A host gate prefix of this test's own (the tests' crawls share nothing else)."""
    prefix = f"gate-{uuid.uuid4().hex[:10]}"
    yield f"{prefix}:"
    delete_keys(redis_url, prefix)


@pytest.fixture
def names(redis_url: str) -> Iterator[tuple[str, str]]:
    """Two crawl names (Redis key prefixes) on the same Redis."""
    pair = (f"ga-{uuid.uuid4().hex[:10]}", f"gb-{uuid.uuid4().hex[:10]}")
    yield pair
    for name in pair:
        delete_keys(redis_url, name)


@asynccontextmanager
async def two_crawls(redis_url: str, names: tuple[str, str], gates: str
                     ) -> AsyncIterator[tuple[Redis, FrontierState, FrontierState]]:
    """Crawls A and B, each with HOST (and A with another host) ready at NOW."""
    async with connect(redis_url) as redis:
        a, b = (FrontierState(redis, name, host_gates=gates) for name in names)
        await a.record_appends(NOW, [(HOST, 100, 2), ("own.example", 100, 2)])
        await b.record_append(HOST, 100, NOW)
        yield redis, a, b


def run(coroutine: object) -> None:
    asyncio.run(coroutine)  # type: ignore[arg-type]


def test_a_host_held_by_one_crawl_waits_in_the_other_until_its_release(
        redis_url: str, names: tuple[str, str], gates: str) -> None:
    async def main() -> None:
        async with two_crawls(redis_url, names, gates) as (redis, a, b):
            assert sorted(await a.claim("wa", NOW, 60, max_domains=10)) == ["own.example", HOST]
            assert await b.claim("wb", NOW + 1, 60, max_domains=10) == []
            # B's domain stays ready, due when A's lease would run out, and B waits on the gate
            assert await redis.zscore(b.keys.ready, HOST) == NOW + 60
            assert await redis.hget(b.keys.domain(HOST), "state") == b"r"
            gate = await redis.hgetall(f"{gates}{HOST}")
            assert gate[b"owner"] == f"wa@{a.keys.domain_prefix}".encode()
            assert gate[b"waiting"] == f"{b.keys.ready} ".encode()
            assert (await b.counters())["gate_waits"] == 1
            assert await b.claim("wb", NOW + 2, 60, max_domains=10) == []  # not due: no retry
            assert (await b.counters())["gate_waits"] == 1

            # A's release sets the host's next request time and wakes B at it
            released = await a.reschedule_many("wa", [Reschedule(HOST, NOW + 5, 50)], now=NOW + 3)
            assert released == [Release.READY]
            assert await redis.zscore(b.keys.ready, HOST) == NOW + 5
            # ... and A, whose next claim in the same script would take the host straight
            # back, comes after B: B waited
            assert await redis.zscore(a.keys.ready, HOST) == NOW + 5.5
            assert await b.claim("wb", NOW + 4.9, 60, max_domains=10) == []
            assert await b.claim("wb", NOW + 5, 60, max_domains=10) == [HOST]
            # now A waits for B, its other host untouched
            assert await a.claim("wa", NOW + 6, 60, max_domains=10) == []
            assert await redis.zscore(a.keys.ready, HOST) == NOW + 65
            codes, claimed = await b.release_and_claim(
                "wb", [Reschedule(HOST, NOW + 8, 100)], NOW + 7, lease_seconds=60, max_domains=10)
            assert (codes, claimed) == ([Release.RETIRED], [])  # B had read all of it
            assert await redis.zscore(a.keys.ready, HOST) == NOW + 8
            assert await a.claim("wa", NOW + 8, 60, max_domains=10) == [HOST]

    run(main())


def test_a_released_hosts_next_request_time_holds_for_every_crawl(
        redis_url: str, names: tuple[str, str], gates: str) -> None:
    async def main() -> None:
        async with two_crawls(redis_url, names, gates) as (redis, a, b):
            assert HOST in await a.claim("wa", NOW, 60, max_domains=10)
            assert await a.reschedule(HOST, "wa", NOW + 5, new_read_offset=50, now=NOW + 1)
            # B never waited: it finds the gate free but the host not due yet
            assert await b.claim("wb", NOW + 2, 60, max_domains=10) == []
            assert await redis.zscore(b.keys.ready, HOST) == NOW + 5
            assert await redis.hget(f"{gates}{HOST}", "waiting") in (None, b"")
            # a released gate's key lives until the host's next request time (+1 s), a held
            # one until its lease runs out (+1 s)
            assert 0 < await redis.ttl(f"{gates}{HOST}") <= 5
            assert await b.claim("wb", NOW + 5, 60, max_domains=10) == [HOST]
            assert 55 < await redis.ttl(f"{gates}{HOST}") <= 61

    run(main())


def test_the_gate_of_a_dead_holder_frees_when_its_lease_runs_out(
        redis_url: str, names: tuple[str, str], gates: str) -> None:
    async def main() -> None:
        async with two_crawls(redis_url, names, gates) as (redis, a, b):
            assert HOST in await a.claim("crashed", NOW, 10, max_domains=10)
            assert await b.claim("wb", NOW + 9, 10, max_domains=10) == []
            assert await b.claim("wb", NOW + 10.5, 10, max_domains=10) == [HOST]
            # The holder comes back to life: its lease in its own crawl was never taken
            # over, but the host was: it has lost the domain, which waits in its crawl.
            assert not await a.renew(HOST, "crashed", NOW + 11, lease_seconds=10)
            assert await a.renew_many("crashed", [(HOST, 0)], NOW + 11, lease_seconds=10) == [
                Renewal.LOST]
            assert await a.claim("wa", NOW + 11, 10, max_domains=10) == ["own.example"]
            assert await redis.zscore(a.keys.ready, HOST) == NOW + 20.5  # B's lease end
            assert not await a.reschedule(HOST, "crashed", NOW + 12, new_read_offset=100)

    run(main())


def test_renewals_extend_the_gate_and_expired_leases_free_it_at_once(
        redis_url: str, names: tuple[str, str], gates: str) -> None:
    async def main() -> None:
        async with two_crawls(redis_url, names, gates) as (redis, a, b):
            assert HOST in await a.claim("wa", NOW, 10, max_domains=10)
            assert await a.renew(HOST, "wa", NOW + 8, lease_seconds=10, read_offset=20)
            assert await a.renew_many("wa", [(HOST, 30)], NOW + 12, lease_seconds=10) == [
                Renewal.RENEWED]
            assert await b.claim("wb", NOW + 19, 10, max_domains=10) == []  # until NOW + 22
            assert await redis.zscore(b.keys.ready, HOST) == NOW + 22
            # the holder's renewals now say B waits: its dispatcher gives the host up soon
            assert await a.renew_many("wa", [(HOST, 30), ("own.example", 0)], NOW + 12.5,
                                      lease_seconds=10) == [Renewal.WANTED, Renewal.RENEWED]
            assert await redis.zscore(b.keys.ready, HOST) == NOW + 22
            # The supervisor learns the holder died: its leases end now, the gate with them
            # (B, waiting, is due at once: the gate had no next request time yet).
            assert await a.expire_leases_of("wa") == 2  # (own.example's too)
            assert await redis.zscore(b.keys.ready, HOST) == 0
            assert await b.claim("wb", NOW + 19.5, 10, max_domains=10) == [HOST]

    run(main())


def test_retiring_a_domain_frees_its_gate(
        redis_url: str, names: tuple[str, str], gates: str) -> None:
    async def main() -> None:
        async with two_crawls(redis_url, names, gates) as (redis, a, b):
            assert HOST in await a.claim("wa", NOW, 60, max_domains=10)
            assert await b.claim("wb", NOW + 1, 60, max_domains=10) == []
            assert await a.retire_if_exhausted(HOST, "wa", 100, next_fetch_at=NOW + 3, now=NOW + 2)
            assert await redis.zscore(b.keys.ready, HOST) == NOW + 3
            assert await b.claim("wb", NOW + 3, 60, max_domains=10) == [HOST]

    run(main())


def test_one_worker_id_in_two_crawls_does_not_share_the_host(
        redis_url: str, names: tuple[str, str], gates: str) -> None:
    async def main() -> None:
        async with two_crawls(redis_url, names, gates) as (_redis, a, b):
            assert HOST in await a.claim("w", NOW, 60, max_domains=10)
            assert await b.claim("w", NOW, 60, max_domains=10) == []

    run(main())


def test_without_gates_each_crawl_minds_only_itself(
        redis_url: str, names: tuple[str, str]) -> None:
    async def main() -> None:
        async with two_crawls(redis_url, names, "") as (redis, a, b):
            assert HOST in await a.claim("wa", NOW, 60, max_domains=10)
            assert await b.claim("wb", NOW, 60, max_domains=10) == [HOST]
            assert await redis.exists(HOST) == 0  # no gate key (its prefix would be '')

    run(main())


def test_many_waiting_domains_do_not_stall_a_claim(
        redis_url: str, names: tuple[str, str], gates: str) -> None:
    async def main() -> None:
        async with connect(redis_url) as redis:
            a, b = (FrontierState(redis, name, host_gates=gates) for name in names)
            held = [(f"h{n:03d}.example", 10, 1) for n in range(300)]
            await a.record_appends(NOW, held)
            await b.record_appends(NOW, [*held, ("zz-free.example", 10, 1)])  # due last
            assert len(await a.claim("wa", NOW, 60, max_domains=300)) == 300
            # A claim looks at 4 * want + 100 domains at most; the held ones go back to
            # ready, due later, so the next claims reach the free host.
            claims = [await b.claim("wb", NOW + 1, 60, max_domains=1) for _ in range(3)]
            assert claims == [[], [], ["zz-free.example"]]
            assert (await b.counters())["gate_waits"] == 300
            assert await redis.zcount(b.keys.ready, "-inf", NOW + 1) == 0

    run(main())
