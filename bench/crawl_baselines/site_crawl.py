"""One crawl of the single-host case, measured from the server's request log; and the verdict.

Pages are the 200s to the site's HTML pages; a path requested twice counts once in
`distinct` and once in `repeated`; the rate is pages over the request window (first
request to last), so start-up and the crawler's idle wait are outside it.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from archive_testkit.testweb import RequestRecord

TARGET_VS_SCRAPY = 3.0
LABELS = {"ours": "(a) frontier_service", "scrapy": "(c) Scrapy"}


@dataclass(frozen=True)
class SiteCrawl:
    """One crawler's run against a fresh server, measured from that server's request log."""

    crawler: str  # a LABELS key
    server: str
    wall_s: float
    crawler_cpu_s: float
    server_cpu_s: float | None
    exit_code: int
    records: tuple[RequestRecord, ...]
    expected: frozenset[str]
    note: str

    @property
    def counts(self) -> Counter[str]:
        return Counter(r.path_qs for r in self.records)

    @property
    def pages(self) -> int:
        return sum(1 for r in self.records if r.status == 200 and r.path_qs in self.expected)

    @property
    def repeated(self) -> int:
        return sum(1 for n in self.counts.values() if n > 1)

    @property
    def missing(self) -> int:
        return len(self.expected - set(self.counts))

    @property
    def robots(self) -> str:
        statuses = [str(r.status) for r in self.records if r.path_qs == "/robots.txt"]
        return ",".join(statuses) or "none"

    @property
    def window_s(self) -> float:
        return self.records[-1].time - self.records[0].time if len(self.records) > 1 else 0.0

    @property
    def pages_per_s(self) -> float | None:
        return self.pages / self.window_s if self.window_s > 0 and self.exit_code == 0 else None

    @property
    def exactly_once(self) -> bool:
        """Every page fetched, none twice, robots.txt asked for."""
        return not self.missing and not self.repeated and self.robots != "none"


HEADER = (f"{'run':<4} {'crawler':<22} {'pages':>5} {'distinct':>8} {'repeated':>8} "
          f"{'missing':>7} {'robots':>6} {'window s':>8} {'pages/s':>8} {'wall s':>7} "
          f"{'CPU s':>6} {'server CPU s':>12}")


def row(label: str, crawl: SiteCrawl) -> str:
    rate = crawl.pages_per_s
    server_cpu = f"{crawl.server_cpu_s:.1f}" if crawl.server_cpu_s is not None else "-"
    return (f"{label:<4} {LABELS[crawl.crawler]:<22} {crawl.pages:>5} {len(crawl.counts):>8} "
            f"{crawl.repeated:>8} {crawl.missing:>7} {crawl.robots:>6} {crawl.window_s:>8.2f} "
            f"{(f'{rate:.1f}' if rate is not None else '-'):>8} {crawl.wall_s:>7.1f} "
            f"{crawl.crawler_cpu_s:>6.1f} {server_cpu:>12}")


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known and len(known) == len(values) else None


def verdict(server: str, runs: dict[str, list[SiteCrawl]]) -> tuple[list[str], bool]:
    """Median lines per crawler, ours/Scrapy, the exactly-once check; and whether both pass."""
    lines = [f"{server}: medians over {len(runs['ours'])} runs"]
    rates, walls = {}, {}
    for crawler, crawls in runs.items():
        rates[crawler] = median([c.pages_per_s for c in crawls])
        walls[crawler] = median([c.wall_s for c in crawls])
        rate = f"{rates[crawler]:.1f} pages/s" if rates[crawler] is not None else "no rate"
        lines.append(f"  {LABELS[crawler]:<22} {rate} over the request window, "
                     f"wall {walls[crawler]:.1f} s (start-up included)")
    ours, theirs = rates["ours"], rates["scrapy"]
    ratio = ours / theirs if ours is not None and theirs else None
    fast = ratio is not None and ratio >= TARGET_VS_SCRAPY
    once = all(c.exactly_once for c in runs["ours"])
    if walls["ours"] and walls["scrapy"]:
        lines.append(f"  wall time Scrapy / (a): {walls['scrapy'] / walls['ours']:.2f}x")
    shown = f"{ratio:.2f}" if ratio is not None else "n/a"
    lines.append(f"{'PASS' if fast else 'FAIL'}  {server}: (a) / Scrapy pages/s: {shown} "
                 f"(target >= {TARGET_VS_SCRAPY:g})")
    scrapy_repeats = sum(c.repeated for c in runs["scrapy"])
    lines.append(f"{'PASS' if once else 'FAIL'}  {server}: (a) fetched robots.txt and every "
                 f"page exactly once in every run (missing "
                 f"{sum(c.missing for c in runs['ours'])}, repeated "
                 f"{sum(c.repeated for c in runs['ours'])}; Scrapy repeated {scrapy_repeats})")
    return lines, fast and once
