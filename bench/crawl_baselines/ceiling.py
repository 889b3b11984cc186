"""(d) The ceiling: fetch, parse links, hash, from an in-memory queue.

No politeness, no robots.txt, no persistence; the same aiohttp client, link extraction and
canonicalization as the real crawler. The most this machine does for this page mix.

With `--processes N` it runs as N processes, as (a) does: each owns the hosts whose number
is its index modulo N (their seeds, and the links found to them; a link to another
process's host is dropped, there being no queue between them) and N-th of the concurrency.
Pages and CPU are the processes' sums.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import multiprocessing
import re
import time
from dataclasses import asdict
from typing import Any

from bench.crawl_baselines.common import (
    BenchResult,
    Window,
    add_common_args,
    fetch_page,
    make_fetcher,
    seeds,
)
from frontier_service.service.process import run_async
from frontier_service.service.supervisor import resolve_processes, split_concurrency

_HOST_NUMBER = re.compile(r"(\d+)")


def owner(domain: str, shards: int) -> int:
    """The process that crawls `domain`: its host number modulo shards (the test web's names
    carry one); a name without a number goes to process 0."""
    found = _HOST_NUMBER.search(domain)
    return int(found.group(1)) % shards if found else 0


async def crawl(args: argparse.Namespace, shard: int = 0, shards: int = 1) -> BenchResult:
    mine = [url for url in seeds(args) if owner(url.split("/")[2], shards) == shard]
    queue: collections.deque[str] = collections.deque(mine)
    seen = set(queue)
    window = Window(args.warmup, args.seconds)
    ready = asyncio.Event()
    ready.set()

    async def worker() -> None:
        while time.monotonic() < window.deadline:
            if not queue:
                ready.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ready.wait(), 1.0)
                continue
            result, links, _ = await fetch_page(fetcher, queue.popleft())
            window.page(result.error is None)
            for url, domain in links:
                if url not in seen and (shards == 1 or owner(domain, shards) == shard):
                    seen.add(url)
                    queue.append(url)
            ready.set()

    async with make_fetcher(args, polite=False) as fetcher:
        marks = asyncio.create_task(window.run_marks())
        workers = [asyncio.create_task(worker()) for _ in range(args.concurrency)]
        await marks
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return window.result("ceiling loop", queued=len(queue), seen=len(seen))


def child(args: argparse.Namespace, shard: int, shards: int, results: Any) -> None:
    """One of N processes: its share of the hosts and concurrency; its result to `results`."""
    results.put(asdict(run_async(crawl(args, shard, shards), args.loop)))


def crawl_in_processes(args: argparse.Namespace, processes: int) -> BenchResult:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    shares = split_concurrency(args.concurrency, processes)
    children = [context.Process(target=child, args=(argparse.Namespace(**{
        **vars(args), "concurrency": share}), index, processes, results))
        for index, share in enumerate(shares)]
    for process in children:
        process.start()
    done = [results.get(timeout=args.warmup + args.seconds + 120) for _ in children]
    for process in children:
        process.join()
    return BenchResult(
        "ceiling loop", sum(r["pages"] for r in done),
        sum(r["window_s"] for r in done) / len(done), sum(r["cpu_s"] for r in done),
        sum(r["total_pages"] for r in done), sum(r["errors"] for r in done),
        {"processes": processes, "queued": sum(r["extra"]["queued"] for r in done),
         "seen": sum(r["extra"]["seen"] for r in done)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add_common_args(parser)
    parser.add_argument("--processes", default="1", help="processes (N or auto), as (a)'s")
    args = parser.parse_args()
    processes = resolve_processes(args.processes)
    if processes == 1:
        result = run_async(crawl(args), args.loop)
        result.extra["processes"] = 1
    else:
        result = crawl_in_processes(args, processes)
    result.emit()


if __name__ == "__main__":
    main()
