"""Compaction case of bench/crawl_bench.py (`--case compaction`): frontier files of many
domains, most of each fetched (checkpointed), compacted in one pass.

Prints the files' disk bytes before and after, the ratio of what is left on disk to the
unfetched bytes (1.0 would be a frontier that holds only what is still to fetch; the rest
is each file's partly fetched last block and the 16-byte fingerprints kept per fetched
URL), and the pass's throughput (MB of fetched lines punched per second, files per second).
No target: the figures are for RESULTS.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from frontier_service.frontier.checkpoint import OffsetCheckpoint, checkpoint_dir
from frontier_service.frontier.compaction import compact_crawl, disk_usage
from frontier_service.frontier.frontier_files import FrontierFiles
from frontier_service.frontier.frontier_record import FrontierRecord

NAME = "bench"
BATCH = 50  # URLs per append, as the crawler's link flushes make them


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("compaction case")
    group.add_argument("--compaction-domains", type=int, default=2000)
    group.add_argument("--compaction-urls", type=int, default=1000, help="URLs per domain")
    group.add_argument("--compaction-fetched", type=float, default=0.9,
                       help="share of each domain's URLs fetched (checkpointed) before the pass")


def fill(root: Path, *, domains: int, urls: int, fetched: float) -> int:
    """Write the files and a checkpoint at each domain's fetched share; returns the unfetched bytes."""
    files = FrontierFiles(root)
    checkpoint = OffsetCheckpoint(checkpoint_dir(root, NAME), "fill")
    unfetched = 0
    for d in range(domains):
        domain = f"host{d:06d}.example"
        done_at, end = 0, 0
        for start in range(0, urls, BATCH):
            records = [FrontierRecord(f"https://{domain}/articles/{i:08d}/a-page-title-of-some-length",
                                      2, 1.0, 1_800_000_000) for i in range(start, start + BATCH)]
            _, end = files.append(domain, records)
            if start + BATCH <= urls * fetched:
                done_at = end
        checkpoint.advance(domain, done_at, 0)
        unfetched += end - done_at
    checkpoint.close()
    files.close()
    return unfetched


def run_case(args: argparse.Namespace, work: Path) -> bool:
    root = work / "data"
    root.mkdir(parents=True)
    print(f"compaction bench {time.strftime('%Y-%m-%d %H:%M')}: {args.compaction_domains} domains "
          f"x {args.compaction_urls} URLs, {args.compaction_fetched:.0%} fetched", flush=True)
    unfetched = fill(root, domains=args.compaction_domains, urls=args.compaction_urls,
                     fetched=args.compaction_fetched)
    before = disk_usage(root)
    dry = compact_crawl(root, NAME, dry_run=True)
    report = compact_crawl(root, NAME)
    after = disk_usage(root)
    mb = report.bytes_punched / 1e6
    print(f"  apparent {before.apparent_bytes / 1e6:,.1f} MB; on disk "
          f"{before.frontier_disk_bytes / 1e6:,.1f} MB -> {after.frontier_disk_bytes / 1e6:,.1f} MB "
          f"(dry run said {dry.bytes_freed / 1e6:,.1f} MB freed; freed {report.bytes_freed / 1e6:,.1f} MB)")
    print(f"  unfetched {unfetched / 1e6:,.1f} MB: on disk after / unfetched = "
          f"{after.frontier_disk_bytes / max(unfetched, 1):.2f}x (of which .seen fingerprints "
          f"{after.seen_bytes / 1e6:,.1f} MB)")
    print(f"  pass: {report.files:,} files, {mb:,.1f} MB punched in {report.seconds:.2f} s = "
          f"{mb / max(report.seconds, 1e-9):,.0f} MB/s, {report.files / max(report.seconds, 1e-9):,.0f} "
          f"files/s", flush=True)
    return report.errors == 0 and report.unsupported == 0
