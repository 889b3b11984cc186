"""What every crawler in the crawl bench shares: its options, the window, the page work, the result.

Each crawler runs in its own process (`python -m bench.crawl_baselines.<name> ...`),
crawls the test web from the same seeds with the same politeness, counts pages finished
inside the measured window (after the warm-up), and prints one JSON result line.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import resource
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from archive_pipelines.canonical_urls import try_canonical_url_and_domain
from frontier_service.fetch import Fetcher, FetchResult, FetchSettings, links_from_fetch
from frontier_service.scope.address_policy import AddressPolicy
from frontier_service.scope.resolver import CrawlResolver

USER_AGENT = "crawl-bench/0.1"
MAX_BODY_BYTES = 2 * 1024 * 1024  # traps serve 1 GB bodies: every crawler stops at this


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, required=True, help="test web port on 127.0.0.1")
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--host-pattern", default="site{n:04d}.test")
    parser.add_argument("--concurrency", type=int, default=512)
    parser.add_argument("--delay", type=float, default=1.0, help="seconds between requests to a host")
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window")
    parser.add_argument("--work-dir", required=True, help="scratch directory (blob store ...)")
    parser.add_argument("--loop", default="auto", choices=["auto", "asyncio", "uvloop"],
                        help="asyncio event loop (auto: uvloop if installed)")


def seeds(args: argparse.Namespace) -> list[str]:
    return [f"http://{args.host_pattern.format(n=n)}/" for n in range(args.hosts)]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Window:
    """Counts pages; snapshots the count and CPU when the measured window opens and closes."""

    warmup: float
    seconds: float
    started: float = field(default_factory=time.monotonic)
    pages: int = 0
    errors: int = 0
    marks: dict[str, tuple[float, int, float]] = field(default_factory=dict)

    def page(self, ok: bool = True) -> None:
        self.pages += 1
        self.errors += not ok

    def mark(self, name: str, cpu: float | None = None) -> None:
        """`cpu`: the crawler's CPU seconds if not this process's alone (several processes)."""
        self.marks[name] = (time.monotonic(), self.pages, cpu_seconds() if cpu is None else cpu)

    @property
    def deadline(self) -> float:
        return self.started + self.warmup + self.seconds

    async def run_marks(self) -> None:
        """Mark `open` after the warm-up and `close` at the end (asyncio crawlers)."""
        await asyncio.sleep(self.warmup)
        self.mark("open")
        await asyncio.sleep(self.seconds)
        self.mark("close")

    def result(self, name: str, **extra: Any) -> BenchResult:
        (t0, p0, c0), (t1, p1, c1) = self.marks["open"], self.marks["close"]
        return BenchResult(name, p1 - p0, t1 - t0, c1 - c0, self.pages, self.errors, extra)


@dataclass
class BenchResult:
    name: str
    pages: int  # finished inside the window
    window_s: float
    cpu_s: float  # this crawler's process, inside the window
    total_pages: int
    errors: int
    extra: dict[str, Any]

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.window_s if self.window_s > 0 else 0.0

    def emit(self) -> None:
        print("RESULT " + json.dumps(asdict(self)), flush=True)


def make_fetcher(args: argparse.Namespace, *, polite: bool = True) -> Fetcher:
    """The fetch path every asyncio crawler here uses (and frontier_service uses too)."""
    # As frontier_service configures it: no total cap (workers bound what is in flight),
    # so keep-alive connections to thousands of hosts are reused, not closed and reopened.
    settings = FetchSettings(user_agent=USER_AGENT, max_body_bytes=MAX_BODY_BYTES,
                             connection_limit=0, limit_per_host=1 if polite else 0)
    resolver = CrawlResolver([("*.test", f"127.0.0.1:{args.port}")],
                             policy=AddressPolicy(["127.0.0.0/8"]))
    return Fetcher(settings, resolver=resolver)


async def fetch_page(fetcher: Fetcher, url: str) -> tuple[FetchResult, list[tuple[str, str]], str]:
    """Fetch one page, hash its body, and return its in-scope links as (canonical URL, domain)."""
    result = await fetcher.fetch(url, follow_redirects=False, max_attempts=1)
    digest = hashlib.sha256(result.body or b"").hexdigest()
    links: list[tuple[str, str]] = []
    page_links = links_from_fetch(result) if result.ok else None
    targets = page_links.pages if page_links is not None else []
    if result.redirects:
        targets = [*targets, result.redirects[-1].location]
    for link in targets:
        found = try_canonical_url_and_domain(link)
        if found is not None and found[1].endswith(".test"):
            links.append((found[0], found[1]))
    return result, links, digest
