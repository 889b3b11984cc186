"""DomainClaimer against a real redis-server: a stopping crawler hands back every domain it
leased, even one whose release the periodic checkpoint is still making durable."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.claim_settings import ClaimSettings
from frontier_service.pages.claimer import DomainClaimer
from frontier_service.pages.held_host import Outcome
from frontier_service.pages.host_dispatcher import HostDispatcher
from frontier_service.pages.visit_buffer import VisitBuffer
from tests.frontier_service.frontier.helpers import open_frontier
from tests.helpers.crawls import delete_keys

HOST = "one.example"


@pytest.fixture
def name(redis_url: str) -> Iterator[str]:
    """A crawl name (Redis key prefix) and a host gate prefix of this test's own."""
    crawl = f"cl-{uuid.uuid4().hex[:10]}"
    yield crawl
    delete_keys(redis_url, crawl)


def test_the_shutdown_sends_the_release_a_slow_periodic_checkpoint_holds(
        redis_url: str, name: str, tmp_path: Path) -> None:
    """The last URL of the host is handled and the host released just before the stop; the
    periodic checkpoint has taken that release and is still making it durable (an fsync
    on a busy machine) when the shutdown flushes. Were the release sent by neither, the
    domain would stay leased to a stopped process for a whole lease (the next crawler of
    the crawl waits 120 s)."""

    async def main() -> None:
        async with open_frontier(redis_url, tmp_path / "frontier", name,
                                 host_gates=f"{name}-gate:") as frontier:
            await frontier.add_urls([(f"http://{HOST}/a", 0)])
            metrics, settings = CrawlMetrics(), ClaimSettings(capacity=2)
            hosts = HostDispatcher(frontier.files, metrics, VisitBuffer(frontier),
                                   settings=settings)
            released, entered, go_on = asyncio.Event(), asyncio.Event(), asyncio.Event()

            async def slow_checkpoint() -> None:  # the first one after the release holds it
                if released.is_set() and not entered.is_set():
                    entered.set()
                    await go_on.wait()

            claimer = DomainClaimer(frontier, "w1", hosts, metrics=metrics, settings=settings,
                                    checkpoint=slow_checkpoint)
            stopping, finished = asyncio.Event(), asyncio.Event()
            claiming = asyncio.create_task(claimer.run(stopping))
            item = await asyncio.wait_for(hosts.queue.get(), 10)
            assert item is not None and item.domain == HOST
            hosts.starting(item)
            checkpoints = asyncio.create_task(claimer.run_checkpoints(finished, every_s=0.01))
            hosts.finished(item, Outcome(time.time(), item.end_offset))  # drained: released
            assert HOST not in hosts.held and hosts.releases
            released.set()
            await asyncio.wait_for(entered.wait(), 10)

            stopping.set()
            await asyncio.sleep(0.3)  # the shutdown's flush runs while the checkpoint waits
            go_on.set()
            await asyncio.wait_for(claiming, 10)
            finished.set()
            await asyncio.wait_for(checkpoints, 10)

            owner = await frontier.redis.hget(frontier.state.keys.domain(HOST), "lease_owner")
            assert owner in (b"", None)
            assert metrics.leases_lost == 0

    asyncio.run(main())
