"""The crawl bench's revisit case: a second crawl of a site with conditional requests against
one without, in one run.

The site is the test web's documentation host (`--revisit-pages` pages, 50 links each; its own
process, request log on disk), every 200 with an ETag and a Last-Modified. `frontier-service
run` (embedded Redis, --min-delay 0, concurrency 16, 8 in flight to the host, no adaptive
delay) crawls it once with `--revisit-of docs`, keeping the validators. Then the site changes
(`revision=1`: `--revisit-changed` of its pages get a new body) and the data dir is copied
twice; each copy is crawled again under a new crawl name, one with `--revisit-of docs`
(conditional requests: the unchanged pages answer 304 and are captured as the earlier body),
one without (every body downloaded again, the unchanged ones deduplicated by the store). For
each: pages/s over the request window of the site's log, pages answered 200 and 304, body bytes
received (the crawler's decoded body bytes: a 304 has none), and bodies newly stored; then the
ratios conditional / unconditional. No target: the figures decide whether conditional requests
are worth their Redis memory (about 300 bytes per URL).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from archive_testkit.testweb import TestWebConfig, read_jsonl, serve_in_subprocess
from bench.crawl_baselines.single_host import ARCHIVE_TOML, FRONTIER_SERVICE, REPO

VALIDATORS_KEY = "docs"


@dataclass(frozen=True)
class CrawlResult:
    label: str
    ok: int  # 200s of the site
    not_modified: int  # 304s
    window_s: float  # first to last request to the site
    body_bytes: int  # decoded body bytes the crawler received and archived
    new_blobs: int  # bodies the store did not hold
    exit_code: int

    @property
    def pages(self) -> int:
        return self.ok + self.not_modified

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.window_s if self.window_s > 0 else 0.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("revisit case")
    group.add_argument("--revisit-pages", type=int, default=5000,
                       help="pages of the documentation site")
    group.add_argument("--revisit-changed", type=float, default=0.1,
                       help="share of the pages that change between the first and second crawl")


def crawl(site: TestWebConfig, data: Path, work: Path, *, label: str, crawl_name: str,
          conditional: bool) -> CrawlResult:
    """One crawl of the site by `frontier-service run` into `data`; its figures."""
    log = work / f"{label}.jsonl"
    with serve_in_subprocess(site, log_path=log) as web:
        host = site.docs_host
        command = [str(FRONTIER_SERVICE), "--data-dir", str(data), "--redis-url", "embedded",
                   "run", "--crawl-name", crawl_name, "--seed", f"http://{host}/",
                   "--allowed-domain", host, "--host-map", f"{host}=127.0.0.1:{web.port}",
                   "--allow-network", "127.0.0.0/8", "--min-delay", "0", "--concurrency", "16",
                   "--per-host-concurrency", "8", "--max-depth", "20", "--exit-when-idle", "2",
                   "--metrics-port", "-1"]
        if conditional:
            command += ["--revisit-of", VALIDATORS_KEY]
        with open(work / f"{label}.log", "w") as err:
            done = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, stderr=err,
                                  text=True, check=False)
    summary = _summary(done.stdout)
    records = [r for r in read_jsonl(log) if r.host == site.docs_host]
    times = sorted(r.time for r in records)
    statuses = Counter(r.status for r in records if r.path_qs != "/robots.txt")
    return CrawlResult(label, ok=statuses[200], not_modified=statuses[304],
                       window_s=times[-1] - times[0] if len(times) > 1 else 0.0,
                       body_bytes=int(summary.get("body_bytes", 0)),
                       new_blobs=int(summary.get("new_blobs", 0)), exit_code=done.returncode)


def _summary(stdout: str) -> dict[str, object]:
    """The JSON line `frontier-service run` prints last ({} if there is none)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except ValueError:
                continue
            if isinstance(found, dict):
                return found
    return {}


def describe(result: CrawlResult) -> str:
    failed = f", crawler exit {result.exit_code}" if result.exit_code else ""
    return (f"{result.label:<28} {result.pages_per_s:8.1f} pages/s ({result.pages:,} pages in "
            f"{result.window_s:.1f} s: {result.ok:,} x 200, {result.not_modified:,} x 304), "
            f"body bytes received {result.body_bytes:,}, bodies stored {result.new_blobs:,}"
            f"{failed}")


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def run_case(args: argparse.Namespace, work: Path) -> bool:
    """The first crawl, then both second crawls; their figures and ratios. True when every
    crawl exited 0 and the conditional one got 304s."""
    site = TestWebConfig(hosts=0, docs_pages=args.revisit_pages, docs_links=50)
    changed = site.with_changes(revision=1, changed_fraction=args.revisit_changed)
    print(f"\nrevisit case {time.strftime('%Y-%m-%d %H:%M')}: a {args.revisit_pages}-page "
          f"documentation site (test web, ETag + Last-Modified on every 200) crawled once, then "
          f"{args.revisit_changed:.0%} of its pages changed and it is crawled again with "
          f"conditional requests and without; frontier-service run, --min-delay 0, concurrency "
          f"16, 8 in flight to the host, embedded Redis", flush=True)
    work.mkdir(parents=True)
    first_data = work / "data"
    first_data.mkdir()
    (first_data / "archive.toml").write_text(ARCHIVE_TOML)
    first = crawl(site, first_data, work, label="first crawl", crawl_name="first",
                  conditional=True)
    print(describe(first), flush=True)
    results = {}
    for label, conditional in (("again, conditional", True), ("again, unconditional", False)):
        data = work / label.replace(", ", "-")
        shutil.copytree(first_data, data, symlinks=True)
        results[conditional] = crawl(changed, data, work, label=label, crawl_name="second",
                                     conditional=conditional)
        print(describe(results[conditional]), flush=True)
    cond, plain = results[True], results[False]
    print(f"conditional / unconditional: pages/s {_ratio(cond.pages_per_s, plain.pages_per_s)}, "
          f"body bytes received {_ratio(cond.body_bytes, plain.body_bytes)}, bodies stored "
          f"{_ratio(cond.new_blobs, plain.new_blobs)} ({cond.not_modified:,} of "
          f"{cond.pages:,} pages unchanged)", flush=True)
    return all(r.exit_code == 0 for r in (first, cond, plain)) and cond.not_modified > 0
