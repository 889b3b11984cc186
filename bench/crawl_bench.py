"""Crawl throughput: frontier_service against the seed's PostgreSQL queue, Scrapy and a ceiling.

    .venv/bin/python bench/crawl_bench.py                 # 2,000 hosts, 60 s measured each
    .venv/bin/python bench/crawl_bench.py --seconds 20 --hosts 500 --warmup 5
    .venv/bin/python bench/crawl_bench.py --case single-host   # one website, us vs Scrapy
    .venv/bin/python bench/crawl_bench.py --case bomb          # bomb hosts beside a site
    .venv/bin/python bench/crawl_bench.py --case revisit       # a site again, 304s vs bodies
    .venv/bin/python bench/crawl_bench.py --case browser       # --browser always/auto/never
    .venv/bin/python bench/crawl_bench.py --case browser --quick   # its smoke run (~2 min)
    .venv/bin/python bench/crawl_bench.py --case compaction    # frontier files compacted
    .venv/bin/python bench/crawl_bench.py --case soak [--quick]   # fds and RSS per process, long
    .venv/bin/python bench/crawl_bench.py --case redis-memory  # Redis bytes, extrapolated
    .venv/bin/python bench/crawl_bench.py --case adds          # URL adds per owner (crawl_adds.py)
    .venv/bin/python bench/crawl_bench.py --case all           # every case (browser, adds aside)
    .venv/bin/python bench/crawl_bench.py --case migrate       # migrate-from-postgres rows/s
    .venv/bin/python bench/crawl_bench.py --case machines      # two machines' CPU per page

Multi-host case (the default, `--case multi-host`; target >= 600 pages/s over 60 s). One
test web (its own process: the crawlers' CPU is measured apart from it) serves every
crawler in turn with the same settings: `--hosts` virtual hosts, 100 ms latency, 1 s per
host, 512 concurrent fetches, seeds = every host's home page. Each crawler runs in its
own process and counts the pages it finished inside the measured window after a warm-up:
(a) frontier_service (`frontier-service run --processes auto`: one CrawlerService per CPU on
    one Redis frontier, frontier files, archiving; the process count is printed),
(b) the seed's old design, PostgreSQL as the queue (FOR UPDATE SKIP LOCKED, one
    connection per worker), same fetch path,
(c) Scrapy with equivalent settings, (d) the ceiling loop (no politeness, no persistence)
    in as many processes as (a) ran, each with its share of the hosts.
While (a) crawls, its frontier's counters give the add mix: the share of the URLs offered
to the frontier after the warm-up that were new. Then the frontier micro-benchmarks (with
that share as their crawl-mix line) and Redis bytes per seen / visited URL. Needs the
`bench` extra (scrapy, asyncpg); a missing one is reported and skipped.

Single-host case (`--case single-host`; bench/crawl_baselines/single_host.py): a
documentation site of 500 pages with 300 links each (`archive_testkit.testweb.docs_site`),
written as static files and served by Python's threaded `http.server` (`--site-server
testweb`: the aiohttp test web's docs host instead; `both`: each). (a) `frontier-service
run` (fresh data dir and embedded Redis, no adaptive delay) and (c) Scrapy
(bench/crawl_baselines/scrapy_site.py) crawl it from its home page, with concurrency 16, 8
requests in flight to the host (Scrapy's default), delay 0 and max depth 5, each against a
freshly started server, alternating over `--repeat` runs. Per run, from the server's
request log: pages, distinct and repeated paths, pages/s over the request window (first to
last request), and wall time of the crawler process (start-up included). Targets: (a) /
Scrapy pages/s >= 3 on the medians, and (a) fetches every page exactly once; the case exits
1 when either fails.

Bomb case (`--case bomb`; bench/crawl_baselines/bomb_case.py): a documentation site crawled
by `frontier-service run` for `--bomb-seconds` alone, then beside `--bomb-hosts` hosts
serving compression bombs (three each, every encoding, 10 GiB of zeros each), alternated over
`--bomb-repeat` pairs. The site's pages/s with / without the bomb hosts (medians) is the
figure (target >= 0.9), with the largest gap between two requests to the site; the case exits
1 when the ratio misses the target.

Revisit case (`--case revisit`; bench/crawl_baselines/revisit_case.py): the documentation
site (`--revisit-pages`) crawled once with `--revisit-of`, then, `--revisit-changed` of its
pages changed, crawled again from two copies of that data dir: with conditional requests and
without. Pages/s, pages answered 200 / 304, body bytes received and bodies stored for each, and
the ratios. No target (`--case all` leaves it out).

Browser case (`--case browser`; bench/crawl_baselines/browser_case.py): `frontier-service run
--browser always`, `auto` and `never` on a mixed test web (10% script-built pages) and on the
documentation site, each crawled to the end with the same seeds and limits: pages, wall s,
pages/s, CPU per page of the crawler's whole process tree (Chromium included), browser pages
rendered, resources captured (distinct answered URLs in the page records). Targets per site:
auto captures >= 99% of always's resources and is >= 5x faster (pages/s); the case exits 1
when one is missed. `--quick` for a smoke run (exit 1 only when a crawl fails). `--case all` leaves it out.

Soak case (`--case soak`; bench/crawl_soak.py says what it does) and Redis memory case
(`--case redis-memory`; bench/crawl_redis_memory.py). `--case all` leaves both out.
Adds case (`--case adds`; bench/crawl_adds.py): new URLs added per second per owner (machine)
with the shared seen filter in Redis and with a per-owner filter in process, one and two
owners, target >= 200,000 per owner with the per-owner filter. `--case all` leaves it out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import redis as redis_client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from archive_pipelines.embedded_redis import LocalRedis  # noqa: E402
from archive_testkit.testweb import TestWebConfig, serve_in_subprocess  # noqa: E402
from bench import (  # noqa: E402
    crawl_adds,
    crawl_compaction,
    crawl_machines,
    crawl_migrate,
    crawl_redis_memory,
    crawl_soak,
)
from bench.crawl_baselines import bomb_case, browser_case, revisit_case, single_host  # noqa: E402
from bench.crawl_baselines.pg_server import BenchPostgres, asyncpg_dsn, database_url_from_env  # noqa: E402

TARGETS = {"pages_per_s": 600.0, "vs_ceiling": 0.6, "vs_scrapy": 3.0, "adds_per_s": 200_000.0,
           "claims_per_s": 20_000.0}


def test_web_config(args: argparse.Namespace) -> TestWebConfig:
    # No Crawl-delay hosts: every crawler then owes each host the same 1 s (Scrapy's
    # DOWNLOAD_DELAY ignores robots.txt's Crawl-delay).
    return TestWebConfig(hosts=args.hosts, latency_ms=args.latency_ms, crawl_delay_fraction=0.0)


def run_crawler(module: str, args: argparse.Namespace, port: int, work: Path,
                *extra: str) -> dict[str, object] | str:
    """Run one crawler process; its RESULT line as a dict, or a one-line failure."""
    command = [sys.executable, "-m", f"bench.crawl_baselines.{module}", "--port", str(port),
               "--hosts", str(args.hosts), "--concurrency", str(args.concurrency),
               "--delay", str(args.delay), "--warmup", str(args.warmup),
               "--seconds", str(args.seconds), "--work-dir", str(work), "--loop", args.loop,
               *extra]
    log = work.with_suffix(".log")
    work.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as err:
        done = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True,
                              timeout=args.warmup + args.seconds + 300, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT "):]))
    tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
    return f"failed (exit {done.returncode}): {tail[0][:200]} (log: {log})"


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} CPUs"


def describe(name: str, result: dict[str, object] | str, web_cpu: float | None) -> str:
    if isinstance(result, str):
        return f"{name:<34} {result}"
    pages, window = int(str(result["pages"])), float(str(result["window_s"]))
    cpu = float(str(result["cpu_s"]))
    web = f", test web CPU {web_cpu:.1f} s" if web_cpu is not None else ""
    return (f"{name:<34} {pages / window:8.1f} pages/s  ({pages:,} pages in {window:.1f} s; "
            f"crawler CPU {cpu:.1f} s = {cpu / max(pages, 1) * 1000:.2f} ms/page{web}; "
            f"errors {result['errors']})")


@dataclass
class AddMix:
    """The frontier's own counters during (a): URLs offered to add_urls / add_canonical, and
    how many were new, at the end of the warm-up and at the end of the crawl."""

    warmup_s: float
    at_warmup: tuple[int, int] | None = None
    last: tuple[int, int] = (0, 0)

    @property
    def window(self) -> tuple[int, int]:
        """(offered, new) after the warm-up: the crawl's steady state, without the seeds."""
        start = self.at_warmup or (0, 0)
        return self.last[0] - start[0], self.last[1] - start[1]

    @property
    def share(self) -> float | None:
        offered, new = self.window
        return new / offered if offered else None

    def describe(self) -> str:
        offered, new = self.window
        total_offered, total_new = self.last
        return (f"(a) offered the frontier {offered:,} URLs after its {self.warmup_s:g} s "
                f"warm-up, {new:,} of them new; {total_offered:,} and {total_new:,} with the "
                f"warm-up and seeds ({total_new / max(total_offered, 1):.1%})")


@contextlib.contextmanager
def watch_add_mix(redis_url: str, mix: AddMix, every_s: float = 1.0) -> Iterator[AddMix]:
    """Poll every crawl's `{name}:counters` (urls_offered, urls_added) while (a) runs.

    The crawler deletes its keys when it ends, so the last poll before that is kept.
    """
    stop = threading.Event()

    def poll() -> None:
        client = redis_client.Redis.from_url(redis_url)
        first: float | None = None
        try:
            while not stop.wait(every_s):
                offered = added = 0
                for key in client.scan_iter(match="*:counters", count=1000):
                    values = client.hmget(key, ["urls_offered", "urls_added"])
                    offered += int(values[0] or 0)
                    added += int(values[1] or 0)
                if not offered:
                    continue
                now = time.monotonic()
                first = now if first is None else first
                if mix.at_warmup is None and now - first >= mix.warmup_s:
                    mix.at_warmup = (offered, added)
                mix.last = (offered, added)
        except redis_client.RedisError:
            pass  # the server went away with the crawl: keep the last poll
        finally:
            client.close()

    thread = threading.Thread(target=poll, name="add-mix", daemon=True)
    thread.start()
    try:
        yield mix
    finally:
        stop.set()
        thread.join(timeout=10)


def crawl_all(args: argparse.Namespace, work: Path,
              mix: AddMix) -> dict[str, dict[str, object] | str]:
    results: dict[str, dict[str, object] | str] = {}
    with serve_in_subprocess(test_web_config(args)) as web:
        print(f"test web: {args.hosts} hosts on 127.0.0.1:{web.port} (pid {web.process.pid}), "
              f"{args.latency_ms:g} ms latency; {load()}", flush=True)
        plan = ["frontier", "postgres", "scrapy", "ceiling"] if not args.only else args.only
        for name in plan:
            before = web.cpu_seconds()
            started = time.monotonic()
            if name == "frontier":
                with LocalRedis() as redis, watch_add_mix(redis.url, mix):
                    result = run_crawler("frontier_run", args, web.port, work / "frontier",
                                         "--redis-url", redis.url, "--processes", args.processes)
            elif name == "postgres":
                result = run_postgres(args, web.port, work / "postgres")
            elif name == "scrapy":
                result = run_crawler("scrapy_crawl", args, web.port, work / "scrapy")
            else:  # as many processes as (a) ran: a ceiling for the same machine share
                result = run_crawler("ceiling", args, web.port, work / "ceiling",
                                     "--processes", ceiling_processes(args, results))
            after = web.cpu_seconds()
            web_cpu = after - before if after is not None and before is not None else None
            results[name] = result
            label = LABELS[name]
            if name in ("frontier", "ceiling") and not isinstance(result, str):
                label += f", {result['extra']['processes']} processes"
            print(describe(label, result, web_cpu)
                  + f" [{time.monotonic() - started:.0f} s; {load()}]", flush=True)
            if name == "frontier" and mix.share is not None:
                print(f"    add mix: {mix.share:.1%} new; {mix.describe()}", flush=True)
    return results


def ceiling_processes(args: argparse.Namespace,
                      results: dict[str, dict[str, object] | str]) -> str:
    """(a)'s process count when it ran, else what --processes resolves to."""
    ran = results.get("frontier")
    if isinstance(ran, dict):
        extra = ran.get("extra")
        if isinstance(extra, dict) and "processes" in extra:
            return str(extra["processes"])
    return args.processes


LABELS = {"frontier": "(a) frontier_service", "postgres": "(b) PostgreSQL queue (seed design)",
          "scrapy": "(c) Scrapy", "ceiling": "(d) ceiling loop"}


def run_postgres(args: argparse.Namespace, port: int, work: Path) -> dict[str, object] | str:
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        return "skipped: asyncpg is not installed (pip install 'asyncpg==0.32.*')"
    url = database_url_from_env()
    if url is not None:
        return run_crawler("pg_queue", args, port, work, "--dsn", url)
    try:
        server = BenchPostgres(max_connections=args.concurrency + 50).start()
    except (RuntimeError, OSError) as exc:
        return f"skipped: cannot start PostgreSQL ({exc})"
    try:
        dsn = asyncpg_dsn(server.create_database("crawl_bench"))
        return run_crawler("pg_queue", args, port, work, "--dsn", dsn)
    finally:
        server.stop()


def microbench(args: argparse.Namespace, mix: AddMix) -> dict[str, float]:
    """archive_testkit.frontier_bench.microbench on a private redis-server; prints its output.

    With (a)'s add mix measured, the microbench also adds batches with that share of new URLs.
    """
    command = [sys.executable, "-m", "archive_testkit.frontier_bench.microbench",
               "--urls", str(args.micro_urls), "--seconds", "3",
               "--processes", str(args.micro_processes)]
    if mix.share is not None:
        command += ["--new-share", f"{mix.share:.4f}", "--new-share-source",
                    "measured in crawl_bench", "--new-share-detail", mix.describe()]
    with LocalRedis() as redis:
        done = subprocess.run([*command, "--redis-url", redis.url],
                              cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    print(done.stdout.rstrip() or done.stderr.strip()[-2000:], flush=True)
    rates: dict[str, float] = {}
    adds = re.findall(r"add_urls, new URLs, \w+ .*?: ([\d,]+)/s", done.stdout)
    if adds:
        rates["adds_per_s"] = max(float(a.replace(",", "")) for a in adds)
    claims = re.findall(r"claim\+reschedule, .*?: ([\d,]+)/s", done.stdout)
    if claims:
        rates["claims_per_s"] = max(float(c.replace(",", "")) for c in claims)
    return rates


def rate(result: dict[str, object] | str) -> float | None:
    if isinstance(result, str):
        return None
    return int(str(result["pages"])) / float(str(result["window_s"]))


def verdicts(results: dict[str, dict[str, object] | str], rates: dict[str, float]) -> list[str]:
    lines = []
    ours = rate(results.get("frontier", "missing"))
    for key, label in (("postgres", "PostgreSQL queue"), ("scrapy", "Scrapy"), ("ceiling", "ceiling")):
        theirs = rate(results.get(key, "missing"))
        if ours is not None and theirs:
            lines.append(f"(a) / {label}: {ours / theirs:.2f}x")
    checks = [("(a) pages/s", ours, TARGETS["pages_per_s"])]
    ceiling, scrapy = rate(results.get("ceiling", "")), rate(results.get("scrapy", ""))
    if ours is not None and ceiling:
        checks.append(("(a) / ceiling", ours / ceiling, TARGETS["vs_ceiling"]))
    if ours is not None and scrapy:
        checks.append(("(a) / Scrapy", ours / scrapy, TARGETS["vs_scrapy"]))
    checks += [("URLs added/s (microbench)", rates.get("adds_per_s"), TARGETS["adds_per_s"]),
               ("claims/s (microbench)", rates.get("claims_per_s"), TARGETS["claims_per_s"])]
    for label, value, target in checks:
        if value is not None:
            verdict = "PASS" if value >= target else "FAIL"
            lines.append(f"{verdict}  {label}: {value:,.2f} (target >= {target:,g})")
    return lines


def memory_lines(result: dict[str, object] | str) -> list[str]:
    if isinstance(result, str):
        return []
    extra = result["extra"]
    assert isinstance(extra, dict)
    seen = int(extra["seen_bytes"]) / max(int(extra["seen_capacity"]), 1)
    return [f"Redis per seen URL: {seen:.2f} bytes (Bloom filter sized for "
            f"{int(extra['seen_capacity']):,} URLs at 0.1%; {int(extra['seen_urls']):,} added)",
            f"Redis per visited URL: {float(extra['visited_bytes_per_url']):.1f} bytes "
            f"({int(extra['visited_urls']):,} records)"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--case", choices=["multi-host", "single-host", "bomb", "revisit", "browser",
                                           "compaction", "soak", "redis-memory", "adds",
                                           "migrate", "machines", "all"],
                        default="multi-host",
                        help="multi-host: many hosts, fixed window; single-host: one website, "
                             "crawled to the end; bomb: a website with and without a bomb host; "
                             "revisit: a website crawled again with and without conditional "
                             "requests; browser: --browser always, auto and never on a mixed "
                             "web and the docs site; compaction: frontier files mostly fetched, "
                             "compacted (disk bytes before and after, MB/s); soak: descriptors "
                             "and memory per process over a long crawl; redis-memory: Redis "
                             "bytes per URL and domain; adds: URL adds/s per owner, shared Redis "
                             "seen filter vs a per-owner one (bench/crawl_adds.py); migrate: "
                             "migrate-from-postgres rows/s")
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window per crawler")
    parser.add_argument("--warmup", type=float, default=15.0)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds between requests to a host")
    parser.add_argument("--concurrency", type=int, default=512)
    parser.add_argument("--loop", default="auto", choices=["auto", "asyncio", "uvloop"])
    parser.add_argument("--processes", default="auto",
                        help="(a)'s crawler processes, as `frontier-service run --processes` "
                             "(auto: one per CPU)")
    parser.add_argument("--only", action="append", choices=list(LABELS), help="run only these crawlers")
    parser.add_argument("--micro-urls", type=int, default=300_000, help="URLs for the add microbench")
    parser.add_argument("--micro-processes", type=int, default=1,
                        help="adder processes in the add microbench (its --processes)")
    parser.add_argument("--no-micro", action="store_true", help="skip the frontier microbenchmarks")
    single_host.add_arguments(parser)
    bomb_case.add_arguments(parser)
    revisit_case.add_arguments(parser)
    browser_case.add_arguments(parser)
    crawl_compaction.add_arguments(parser)
    crawl_soak.add_arguments(parser)
    crawl_redis_memory.add_arguments(parser)
    crawl_adds.add_arguments(parser)
    crawl_migrate.add_arguments(parser)
    crawl_machines.add_arguments(parser)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="crawl-bench-"))
    passed = True
    try:
        if args.case in ("multi-host", "all"):
            multi_host(args, work / "multi-host")
        if args.case in ("single-host", "all"):
            passed = single_host.run_case(args, work / "single-host")
        if args.case in ("bomb", "all"):
            passed = bomb_case.run_case(args, work / "bomb") and passed
        if args.case == "revisit":
            passed = revisit_case.run_case(args, work / "revisit") and passed
        if args.case == "browser":
            passed = browser_case.run_case(args, work / "browser") and passed
        if args.case == "compaction":
            passed = crawl_compaction.run_case(args, work / "compaction") and passed
        if args.case == "soak":
            passed = crawl_soak.run_case(args, work / "soak") and passed
        if args.case == "redis-memory":
            passed = crawl_redis_memory.run_case(args, work / "redis-memory") and passed
        if args.case == "adds":
            passed = crawl_adds.run_case(args, work / "adds") and passed
        if args.case == "machines":
            passed = crawl_machines.run_case(args, work / "machines") and passed
        if args.case == "migrate":
            passed = crawl_migrate.run_case(args, work / "migrate") and passed
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if passed else 1


def multi_host(args: argparse.Namespace, work: Path) -> None:
    print(f"crawl bench {time.strftime('%Y-%m-%d %H:%M')}: {args.hosts} hosts, {args.latency_ms:g} ms "
          f"latency, {args.delay:g} s per host, {args.concurrency} concurrent, "
          f"{args.warmup:g} s warm-up + {args.seconds:g} s measured, loop {args.loop}, "
          f"(a) processes {args.processes}", flush=True)
    mix = AddMix(warmup_s=args.warmup)
    results = crawl_all(args, work, mix)
    rates: dict[str, float] = {}
    if not args.no_micro:
        print("\nfrontier microbenchmarks:", flush=True)
        rates = microbench(args, mix)
    print()
    for line in memory_lines(results.get("frontier", "")) + verdicts(results, rates):
        print(line)


if __name__ == "__main__":
    sys.exit(main())
