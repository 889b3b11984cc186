"""Issue 17: how long does rebuilding a lost Redis from the data dir take?

Fills frontier files for N URLs over D domains (written directly with
FrontierFiles.append_many, as the crawler lays them out; cached under bench/.work/ and
reused), writes a checkpoint with read offsets for half of the domains, starts a throwaway
redis-server, and times:

  - OffsetCheckpoint.write of D domains (the crawler writes it every checkpoint_seconds;
    the target is well under 100 ms of CPU for 100k domains: the verdict and exit status)
  - load_checkpoints of that file
  - rebuild_redis: URLs/s, domains/s, Redis memory after
  - audit of the rebuilt Redis (nothing to repair), and after evicting 1% of the domain
    hashes (each recreated, its URLs re-added to the seen filter)

    python bench/rebuild_bench.py [--urls 1000000] [--domains 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from redis.asyncio import Redis  # noqa: E402

from archive_pipelines.embedded_redis import LocalRedis  # noqa: E402
from bench.settle import remove_tree  # noqa: E402
from frontier_service.frontier.checkpoint import OffsetCheckpoint, load_checkpoints  # noqa: E402
from frontier_service.frontier.frontier import Frontier, FrontierConfig  # noqa: E402
from frontier_service.frontier.frontier_files import FrontierFiles  # noqa: E402
from frontier_service.recovery.audit import audit  # noqa: E402
from frontier_service.recovery.redis_rebuild import rebuild_redis  # noqa: E402

WORK = ROOT / "bench" / ".work" / "rebuild"
CHECKPOINT_CPU_TARGET_S = 0.100


def domain(i: int) -> str:
    return f"host{i}.site{i % 97}.example"


def url_lines(i: int, per_domain: int, now: int) -> list[str]:
    return [f"http://{domain(i)}/section/{j % 7}/page-{j}.html?id={i * 31 + j}|{1 + j % 3}|1|{now}\n"
            for j in range(per_domain)]


def ensure_files(root: Path, urls: int, domains: int) -> tuple[dict[str, int], bool]:
    """The frontier files (made once per size); returns each domain's offset after half of
    its URLs, and whether the files were made now."""
    marker = root / f"made-{urls}-{domains}"
    per_domain = max(1, urls // domains)
    now = 1_700_000_000
    halves = {}
    for i in range(domains):
        lines = url_lines(i, per_domain, now)
        halves[domain(i)] = 1 + sum(len(line) for line in lines[:per_domain // 2])
    if marker.exists():
        return halves, False
    remove_tree(root)
    files = FrontierFiles(root)
    batch: dict[str, bytes] = {}
    for i in range(domains):
        batch[domain(i)] = "".join(url_lines(i, per_domain, now)).encode()
        if len(batch) >= 5000:
            files.append_many(batch)
            batch = {}
    files.append_many(batch)
    files.close()
    os.sync()
    marker.write_text("")
    return halves, True


def time_checkpoint(directory: Path, halves: dict[str, int]) -> tuple[float, float, float, int]:
    """(write CPU s, write wall s, load wall s, file bytes) for a checkpoint of every domain,
    half of them with an offset."""
    shutil.rmtree(directory, ignore_errors=True)
    checkpoint = OffsetCheckpoint(directory, "bench")
    for n, (name, half) in enumerate(halves.items()):
        checkpoint.advance(name, half if n % 2 == 0 else 0, 1 if n % 2 == 0 else 0)
    cpu, wall = time.process_time(), time.perf_counter()
    checkpoint.write()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    checkpoint.close()
    started = time.perf_counter()
    load_checkpoints(directory)
    return cpu, wall, time.perf_counter() - started, (directory / "bench.ckpt").stat().st_size


async def time_rebuild(redis_url: str, root: Path, directory: Path, urls: int) -> None:
    client = Redis.from_url(redis_url)
    config = FrontierConfig(name="bench", seen_capacity=max(urls * 2, 1_000_000),
                            visited_expected=10_000)
    frontier = await Frontier(client, root, config).open()
    try:
        checkpoints = load_checkpoints(directory)
        report = await rebuild_redis(frontier, root, checkpoints, crawl_id="bench-crawl")
        memory = (await client.info("memory"))["used_memory"]
        seen_bytes = await frontier.seen.memory_bytes()
        print(f"rebuild_redis: {report.seconds:.2f} s for {report.urls:,} URLs over "
              f"{report.domains:,} domains ({report.bytes / 1e6:.0f} MB of files)")
        print(f"  {report.urls / report.seconds:,.0f} URLs/s, "
              f"{report.domains / report.seconds:,.0f} domains/s; {report.ready:,} ready, "
              f"{report.exhausted:,} exhausted, {report.seen_added:,} added to the seen filter "
              f"({frontier.seen.backend})")
        print(f"  Redis memory after: {memory / 1e6:.1f} MB (seen filter {seen_bytes / 1e6:.1f} MB, "
              f"the rest {(memory - seen_bytes) / 1e6:.1f} MB: "
              f"{(memory - seen_bytes) / max(report.domains, 1):.0f} B per domain)")

        clean = await audit(frontier, root, checkpoints, crawl_id="bench-crawl")
        print(f"audit, nothing lost: {clean.seconds:.2f} s for {clean.checked:,} domains "
              f"({clean.checked / clean.seconds:,.0f}/s), {clean.repaired} repaired, "
              f"{clean.unfetched_domains:,} unfetched")
        evicted = [frontier.state.keys.domain(domain(i)) for i in range(0, report.domains, 100)]
        await client.delete(*evicted)
        repaired = await audit(frontier, root, checkpoints, crawl_id="bench-crawl")
        print(f"audit, {len(evicted):,} domain hashes evicted: {repaired.seconds:.2f} s, "
              f"{repaired.missing:,} recreated, {repaired.unfetched_domains:,} unfetched")
    finally:
        frontier.close()
        await client.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=1_000_000, help="frontier URLs")
    parser.add_argument("--domains", type=int, default=100_000, help="domains (one file each)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    root = WORK / "data"
    started = time.perf_counter()
    halves, made = ensure_files(root, args.urls, args.domains)
    print(f"frontier files: {'made' if made else 'reused'} in {time.perf_counter() - started:.1f} s "
          f"({args.urls:,} URLs, {args.domains:,} domains, under {root})")
    directory = Path(tempfile.mkdtemp(prefix="ckpt-", dir=WORK))
    try:
        cpu, wall, load, size = time_checkpoint(directory, halves)
        verdict = "PASS" if cpu < CHECKPOINT_CPU_TARGET_S else "FAIL"
        print(f"checkpoint write, {len(halves):,} domains: {cpu * 1000:.0f} ms CPU, "
              f"{wall * 1000:.0f} ms wall with fsyncs ({size / 1e6:.1f} MB); "
              f"load {load * 1000:.0f} ms")
        with LocalRedis() as server:
            asyncio.run(time_rebuild(server.url, root, directory, args.urls))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(f"verdict: {verdict} (checkpoint write of {len(halves):,} domains "
          f"< {CHECKPOINT_CPU_TARGET_S * 1000:.0f} ms CPU)")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
