"""The add microbenchmark driven from several processes, as `run --processes N` crawls.

Each child opens its own Frontier (own Redis connection, own file descriptors) on the same
crawl name and directory, builds the same batches and adds every N-th one: together they
add each URL once, through the same add_urls path the crawler uses. Any number of
processes works; on 2 CPUs, 3 keeps a CPU busy while another adder waits on Redis. The parent starts each
round in all children at once and takes the wall time until the last one answers.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from redis.asyncio import Redis

from archive_testkit.frontier_bench.url_batches import make_batches, mix_batches
from frontier_service.frontier.frontier import Frontier, FrontierConfig


@dataclass(frozen=True, slots=True)
class ChildSpec:
    redis_url: str
    root: Path
    config: FrontierConfig
    index: int
    processes: int
    adders: int
    urls: int
    domains: int
    batch: int
    tag: str
    new_share: float | None = None  # also a "mix" round: this share of each batch is new


@dataclass(frozen=True, slots=True)
class ChildRound:
    """What one child did in one round: URLs offered and added, its wall and CPU seconds."""

    offered: int
    added: int
    wall: float
    cpu: float

    def describe(self, index: int) -> str:
        return (f"process {index}: {self.offered:,} URLs ({self.added:,} added) in "
                f"{self.wall:.2f} s, CPU {self.cpu / max(self.offered, 1) * 1e6:.1f} us per URL")


@dataclass(frozen=True, slots=True)
class ParallelRound:
    offered: int
    added: int
    wall: float
    redis_cpu: float
    children: list[ChildRound]

    @property
    def client_cpu(self) -> float:
        return sum(child.cpu for child in self.children)


def child_main(spec: ChildSpec, conn: Connection) -> None:
    """Child entry point (module level, for `spawn`): one round per round-name message."""
    asyncio.run(_child(spec, conn))


async def _child(spec: ChildSpec, conn: Connection) -> None:
    batches = make_batches(spec.urls, spec.domains, spec.batch, clustered=True,
                           seed=len(spec.tag), tag=spec.tag)
    rounds = {"new": batches, "again": batches}
    if spec.new_share is not None:  # same hosts batch by batch, fresh paths
        fresh = make_batches(spec.urls, spec.domains, spec.batch, clustered=True,
                             seed=len(spec.tag), tag=f"{spec.tag}-mix")
        rounds["mix"] = mix_batches(batches, fresh, spec.new_share)
        del fresh
    mine = {name: b[spec.index::spec.processes] for name, b in rounds.items()}
    del batches, rounds
    gc.collect()
    gc.freeze()
    redis = Redis.from_url(spec.redis_url)
    frontier = await Frontier(redis, spec.root, spec.config).open()
    try:
        conn.send("ready")
        while (name := conn.recv()) in mine:
            offered = sum(len(b) for b in mine[name])
            cpu, started = time.process_time(), time.perf_counter()
            added = await add_all(frontier, mine[name], spec.adders)
            conn.send(ChildRound(offered, added, time.perf_counter() - started,
                                 time.process_time() - cpu))
            await frontier.flush_offered()
    finally:
        frontier.close()
        await redis.aclose()


async def add_all(frontier: Frontier, batches: list[list[tuple[str, int]]],
                  adders: int) -> int:
    """Add the batches with `adders` concurrent add_urls callers; returns URLs added."""
    feed = iter(batches)
    added = 0

    async def adder() -> None:
        nonlocal added
        for links in feed:
            result = await frontier.add_urls(links)
            added += result.added  # after the await: no lost update

    await asyncio.gather(*(adder() for _ in range(adders)))
    return added


async def redis_cpu_seconds(redis: Redis) -> float:
    info = await redis.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


async def run_parallel(redis: Redis, specs: list[ChildSpec],
                       rounds: Sequence[str] = ("new", "again")) -> list[ParallelRound]:
    """Start one child per spec, run the named rounds of their adds, and stop them.

    "new" and "again" add the clustered batches (all new, then all duplicates); "mix"
    adds batches of which spec.new_share is new (needs "new" before it).
    """
    context = multiprocessing.get_context("spawn")
    pipes, children = [], []
    for spec in specs:
        parent_end, child_end = context.Pipe()
        child = context.Process(target=child_main, args=(spec, child_end), daemon=True)
        child.start()
        pipes.append(parent_end)
        children.append(child)
    results: list[ParallelRound] = []
    try:
        for pipe in pipes:
            if await asyncio.to_thread(pipe.recv) != "ready":
                raise RuntimeError("an adder process failed to start")
        for name in rounds:
            redis_before = await redis_cpu_seconds(redis)
            started = time.perf_counter()
            for pipe in pipes:
                pipe.send(name)
            done: list[ChildRound] = [await asyncio.to_thread(pipe.recv) for pipe in pipes]
            wall = time.perf_counter() - started
            redis_cpu = await redis_cpu_seconds(redis) - redis_before
            results.append(ParallelRound(sum(c.offered for c in done),
                                         sum(c.added for c in done), wall, redis_cpu, done))
    finally:
        for pipe in pipes:
            pipe.send("stop")
        for child in children:
            child.join(timeout=30)
    return results
