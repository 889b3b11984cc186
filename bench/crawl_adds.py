"""URL adds per owner: the shared seen filter in Redis against a per-owner in-process filter.

    .venv/bin/python bench/crawl_bench.py --case adds
    .venv/bin/python bench/crawl_bench.py --case adds --adds-urls 2000000

Issue 34: with several machines, each owns slots of domains; a seen filter per owner (in its
process, checkpointed to its data dir) could replace the one in Redis. One redis-server of
its own (embedded_redis.LocalRedis), a fresh crawl per case; each owner is a process with its
own root (archive_testkit/frontier_bench/owner_adds.py). Synthetic URLs over `--adds-domains`
domains (make_batches, clustered) in batches of `--adds-batch`, every URL new. Canonicalized
up front, outside the timed part: the timed adds call Frontier.add_canonical (or the owner
filter's equivalent); one reference case times add_urls with canonicalization.

Cases, `--adds-urls` URLs in all per case (two owners: half each):
 (a) one owner (a machine holding all slots), shared Redis filter: add_urls, then add_canonical;
 (b) two owners, Redis filter: all found URLs in their own domains; then half in the other's
     domains (sent through its inbox, appended by its InboxConsumer, counted in its CPU);
 (c) as (a) and (b) with OwnerSeenFilter (owner_filter.py): a blocked Bloom filter (one 64-byte
     block per URL) in a memory-mapped numpy file in the owner's data dir, flushed every 5 s
     and at close, sized for the same error rate (about the Redis one's size); the batch is
     split and formatted in one pass (owner_batches.py); the URLs of the other's domains are
     filtered by the receiving consumer, a whole inbox read at once.
Per case: new URLs appended per second per owner and in total, client CPU and Redis CPU per
URL, the ratio to the Redis filter's same case, and the target "per-owner filter >= 200,000
new URLs/s per owner" (PASS/FAIL; the case exits 1 on a FAIL). On this 2-CPU machine the
two owners and Redis share the CPUs: per-owner figures of (b) and (c) are what a CPU share gives.

What a per-owner filter costs the crawl (correctness), not measured here:
- The filter is keyed by URL, the slot by domain: one owner's file mixes every slot's bits,
  so a slot cannot take "its share" of it along. To move with its slot the filter must be
  split per slot (one file per slot, 1/slots of the size each; the bench's single file is
  the optimistic case), and a slot that changes machine (rebalance on join, takeover) needs
  its slot file copied to the new owner: from the old owner's disk on a rebalance (it is
  alive: flush, then send the file through Redis or a shared store before FREE), from the
  last checkpoint in a shared store (S3 / the blob store) on a takeover after a death.
  Without that the new owner starts the slot empty and queues again every URL it is offered
  for that slot's domains: the whole slot's history is fetched again as pages link to it.
- Checkpoints: the map is MAP_SHARED, so a process crash loses nothing; a machine crash
  loses the bits since the last flush (up to --flush seconds) from its disk, and a takeover
  only has what was last shipped off the machine. The URLs added since are refetched once
  (duplicates, not losses). Bits ahead of the queue (filter flushed, appends lost with the
  disk) lose URLs exactly as today, where the Redis filter says seen and the file is gone.
- The frontier files of a dead machine are already lost with it (orphaned bytes, counted);
  the filter adds the refetch of everything that slot had crawled, unless shipped.
- Inbox traffic: with the Redis filter only new URLs travel to another owner; with owner
  filters every found URL of another owner's domain does (the crawl's mix is mostly
  duplicates, so the streams carry several times more) and the receiver filters it.
- The receiving side filters a whole XREADGROUP reply at once (owner_batches.filter_inbox),
  but hashes every line it receives (blake2b, ~0.3 us): inbox lines carry no fingerprint.
- Capacity: each owner's filter is sized for the URLs its slots will ever hold; after
  rebalances an owner holds more slots than planned, so per-slot files sized by
  capacity / slots are the way to keep the error rate.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from redis.asyncio import Redis

from archive_pipelines.embedded_redis import LocalRedis
from archive_testkit.frontier_bench.owner_adds import OwnerRound, OwnerSpec, start_owner
from archive_testkit.frontier_bench.owner_filter import filter_bytes
from archive_testkit.frontier_bench.parallel_adds import redis_cpu_seconds
from frontier_service.frontier.seen import plan_layout

TARGET_PER_OWNER = 200_000


@dataclass(frozen=True, slots=True)
class Case:
    key: str
    title: str
    owners: int
    other_share: float
    seen: str
    canonicalize: bool = False
    versus: str | None = None  # the Redis filter's same case (for the ratio)


CASES = [
    Case("a-urls", "(a) 1 owner, Redis filter, add_urls (canonicalizing, reference)", 1, 0.0,
         "redis", canonicalize=True),
    Case("a", "(a) 1 owner, Redis filter, add_canonical", 1, 0.0, "redis"),
    Case("b-own", "(b) 2 owners, Redis filter, own domains only", 2, 0.0, "redis"),
    Case("b-half", "(b) 2 owners, Redis filter, half to the other owner", 2, 0.5, "redis"),
    Case("c-one", "(c) 1 owner, per-owner filter", 1, 0.0, "owner", versus="a"),
    Case("c-own", "(c) 2 owners, per-owner filter, own domains only", 2, 0.0, "owner",
         versus="b-own"),
    Case("c-half", "(c) 2 owners, per-owner filter, half to the other owner", 2, 0.5, "owner",
         versus="b-half"),
]


@dataclass(frozen=True, slots=True)
class CaseResult:
    owners: list[OwnerRound]
    wall: float
    redis_cpu: float

    @property
    def appended(self) -> int:
        return sum(o.appended for o in self.owners)

    @property
    def per_owner(self) -> list[float]:
        return [o.appended / o.wall for o in self.owners]

    @property
    def total(self) -> float:
        return self.appended / self.wall


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("adds case")
    group.add_argument("--adds-urls", type=int, default=1_000_000,
                       help="URLs added per case, in all (two owners: half each)")
    group.add_argument("--adds-domains", type=int, default=10_000)
    group.add_argument("--adds-batch", type=int, default=5_000)
    group.add_argument("--adds-adders", type=int, default=4,
                       help="concurrent add callers per owner")
    group.add_argument("--adds-capacity", type=int, default=20_000_000,
                       help="seen filter capacity (Redis and per owner)")


def run_case(args: argparse.Namespace, work: Path) -> bool:
    return asyncio.run(_run(args, work))


async def _run(args: argparse.Namespace, work: Path) -> bool:
    error_rate = 0.001
    layout = plan_layout(args.adds_capacity, error_rate)
    print(f"\nadds case {time.strftime('%Y-%m-%d %H:%M')}: {args.adds_urls:,} new URLs per case "
          f"over {args.adds_domains:,} domains, batches of {args.adds_batch:,}, "
          f"{args.adds_adders} adders per owner; seen filters for {args.adds_capacity:,} URLs "
          f"at {error_rate:.1%} (Redis: {layout.hashes} hashes, "
          f"{layout.shards * layout.shard_bytes / 1e6:.0f} MB; per owner: "
          f"{filter_bytes(args.adds_capacity, error_rate) / 1e6:.0f} MB each); URLs "
          "canonicalized before the timed part except in the add_urls line", flush=True)
    results: dict[str, CaseResult] = {}
    passed = True
    with LocalRedis() as server:
        redis = Redis.from_url(server.url)
        try:
            for case in CASES:
                result = await run_one(case, args, work / case.key, server.url, redis)
                results[case.key] = result
                print(describe(case, result, results), flush=True)
                await redis.flushall()
                shutil.rmtree(work / case.key, ignore_errors=True)
        finally:
            await redis.aclose()
    print()
    for case in CASES:
        if case.seen != "owner":
            continue
        worst = min(results[case.key].per_owner)
        verdict = "PASS" if worst >= TARGET_PER_OWNER else "FAIL"
        passed = passed and verdict == "PASS"
        print(f"{verdict}  per-owner filter >= {TARGET_PER_OWNER:,} new URLs/s per owner, "
              f"{case.title[4:]}: {worst:,.0f}")
    for capacity in (20_000_000, 160_000_000):
        size = filter_bytes(capacity, error_rate)
        redis_layout = plan_layout(capacity, error_rate)
        print(f"per-owner filter for {capacity / 1e6:.0f} M URLs at {error_rate:.1%}: "
              f"{size / 1e6:,.0f} MB of memory and disk ({size / capacity:.2f} bytes per URL); "
              f"the Redis filter: {redis_layout.shards * redis_layout.shard_bytes / 1e6:,.0f} MB")
    return passed


async def run_one(case: Case, args: argparse.Namespace, work: Path, redis_url: str,
                  redis: Redis) -> CaseResult:
    crawl = f"adds-{case.key}-{uuid.uuid4().hex[:6]}"
    specs = [OwnerSpec(redis_url, work / f"owner{i}", crawl, i, case.owners,
                       args.adds_urls // case.owners, case.other_share, args.adds_domains,
                       args.adds_batch, args.adds_adders, case.seen, case.canonicalize,
                       args.adds_capacity, 0.001)
             for i in range(case.owners)]
    started = [start_owner(spec) for spec in specs]
    pipes = [pipe for _, pipe in started]
    try:
        for message in ("joined", "ready"):  # all joined before any builds its URLs
            for pipe in pipes:
                got = await asyncio.to_thread(pipe.recv)
                if got != message:
                    raise RuntimeError(f"an owner sent {got!r}, expected {message!r}")
            if message == "joined":
                for pipe in pipes:
                    pipe.send("prepare")
        redis_before = await redis_cpu_seconds(redis)
        began = time.perf_counter()
        for pipe in pipes:
            pipe.send("run")
        for pipe in pipes:
            await asyncio.to_thread(pipe.recv)  # ("added", sent)
        for pipe in pipes:
            pipe.send("drain")
        rounds: list[OwnerRound] = [await asyncio.to_thread(pipe.recv) for pipe in pipes]
        wall = time.perf_counter() - began
        redis_cpu = await redis_cpu_seconds(redis) - redis_before
    finally:
        for child, pipe in started:
            child.join(timeout=30)
            if child.is_alive():
                child.terminate()
            pipe.close()
    return CaseResult(rounds, wall, redis_cpu)


def describe(case: Case, result: CaseResult, results: dict[str, CaseResult]) -> str:
    n = result.appended
    client = sum(o.cpu for o in result.owners)
    lines = [f"{case.title}: {result.total:,.0f} new URLs/s in all; per owner "
             + ", ".join(f"{rate:,.0f}/s" for rate in result.per_owner)
             + f"; CPU per URL: client {client / n * 1e6:.1f} us, redis "
             f"{result.redis_cpu / n * 1e6:.1f} us; {n:,} URLs in {result.wall:.2f} s"]
    if case.versus is not None and case.versus in results:
        base = results[case.versus]
        lines.append(f"    per-owner filter / Redis filter: "
                     f"{min(result.per_owner) / min(base.per_owner):.2f}x per owner, "
                     f"{result.total / base.total:.2f}x in all")
    for i, o in enumerate(result.owners):
        lines.append(f"    owner {i}: found {o.found:,} ({o.domains_per_batch:.0f} domains per "
                     f"batch), appended {o.appended_own:,} own + {o.appended_received:,} of "
                     f"{o.received:,} received, sent {o.sent:,}; adds {o.add_wall:.2f} s, "
                     f"drained {o.wall:.2f} s, CPU {o.cpu:.2f} s "
                     f"({o.cpu / max(o.appended, 1) * 1e6:.1f} us per URL appended)")
    return "\n".join(lines)
