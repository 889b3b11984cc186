"""(d) The ceiling: fetch, parse links, hash, from an in-memory queue.

No politeness, no robots.txt, no persistence; the same aiohttp client, link extraction and
canonicalization as the real crawler. The most this machine does for this page mix.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import time

from bench.crawl_baselines.common import (
    Window,
    add_common_args,
    fetch_page,
    make_fetcher,
    seeds,
)
from frontier_service.service.runner import run_async


async def crawl(args: argparse.Namespace) -> None:
    queue: collections.deque[str] = collections.deque(seeds(args))
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
            for url, _domain in links:
                if url not in seen:
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
    window.result("ceiling loop", queued=len(queue), seen=len(seen)).emit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add_common_args(parser)
    args = parser.parse_args()
    run_async(crawl(args), args.loop)


if __name__ == "__main__":
    main()
