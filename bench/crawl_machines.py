"""Machines case of bench/crawl_bench.py (`--case machines`): the coordination a crawl shared
by two machines costs, in CPU per page, against one process on the same box.

One multi-host test web (its own process) and one redis-server serve both runs, one after the
other, with the same settings as the multi-host case (`--hosts`, `--latency-ms`, `--delay`,
seeds = every host's home page, warm-up then a measured window):
(a) one crawler process (`frontier_run`, the real CrawlerService) with `--concurrency`;
(b) two crawler processes as machines A and B of one crawl (`--machine`, own data dirs,
    one Redis: slots, inboxes, heartbeats), `--concurrency` split between them, run at once.
Each reports the pages it finished inside its window and its CPU seconds there; the figure
is CPU seconds per page, (b) summed over both machines / (a). Target <= 1.1x. Both runs
share the box's two cores with the test web and Redis, so pages/s is not the figure: the
machines are not separate computers here.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import time
import uuid
from pathlib import Path
from typing import Any

TARGET_RATIO = 1.1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--machines-slots", type=int, default=64,
                        help="machines case: the crawl's slots")


def run_case(args: argparse.Namespace, work: Path) -> bool:
    from archive_pipelines.embedded_redis import LocalRedis
    from archive_testkit.testweb import serve_in_subprocess
    from bench.crawl_bench import load, run_crawler, test_web_config

    with serve_in_subprocess(test_web_config(args)) as web, LocalRedis() as redis:
        print(f"machines case {time.strftime('%Y-%m-%d %H:%M')}: {args.hosts} hosts, "
              f"{args.concurrency} concurrent in all, warm-up {args.warmup:g} s, window "
              f"{args.seconds:g} s; {load()}", flush=True)
        one = run_crawler("frontier_run", args, web.port, work / "one",
                          "--redis-url", redis.url, "--processes", "1")
        name = f"machines-{uuid.uuid4().hex[:8]}"
        half = str(max(1, args.concurrency // 2))
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            runs = [pool.submit(run_crawler, "frontier_run", args, web.port, work / machine,
                                "--redis-url", redis.url, "--processes", "1",
                                "--concurrency", half, "--machine", machine,
                                "--crawl-name", name, "--slots", str(args.machines_slots))
                    for machine in ("A", "B")]
            two = [run.result() for run in runs]
    failed = [r for r in [one, *two] if isinstance(r, str)]
    if failed:
        print(f"FAIL  a run failed: {failed[0]}")
        return False
    return report(one, two)  # type: ignore[arg-type]


def report(one: dict[str, Any], two: list[dict[str, Any]]) -> bool:
    def per_page(cpu: float, pages: int) -> float:
        return cpu / pages * 1000 if pages else float("inf")

    single = per_page(one["cpu_s"], one["pages"])
    print(f"(a) one process: {one['pages']:,} pages in {one['window_s']:.0f} s "
          f"({one['pages'] / one['window_s']:,.0f} pages/s), {one['cpu_s']:.1f} CPU s: "
          f"{single:.2f} ms CPU per page")
    for machine, run in zip(("A", "B"), two, strict=True):
        print(f"(b) machine {machine}: {run['pages']:,} pages in {run['window_s']:.0f} s, "
              f"{run['cpu_s']:.1f} CPU s: {per_page(run['cpu_s'], run['pages']):.2f} ms per page")
    pages = sum(r["pages"] for r in two)
    both = per_page(sum(r["cpu_s"] for r in two), pages)
    ratio = both / single
    print(f"(b) two machines: {pages:,} pages, {both:.2f} ms CPU per page "
          f"({pages / max(r['window_s'] for r in two):,.0f} pages/s together)")
    verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
    print(f"{verdict}  two machines' CPU per page / one process's: {ratio:.2f}x "
          f"(target <= {TARGET_RATIO}x)")
    return ratio <= TARGET_RATIO
