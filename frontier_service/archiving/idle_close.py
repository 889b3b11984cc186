"""IdleClose: when an open page-index segment closes because the crawl went quiet.

A segment closes when full (`segment_pages`) or old (`segment_seconds`, 300 s by default).
A crawl that finishes a site in seconds and then waits (for politeness delays, for new
seeds) would keep its last pages out of the captures for those 300 s; so a segment holding
pages also closes once no page has been archived for `segment_idle_seconds` (30 s).

Each segment costs a file, a row in the catalog's crawl_segment ledger and a Dagster event.
A trickling crawl (one host with a 30 s Crawl-delay) goes "idle" between every two pages:
closing each time would write a segment per page, thousands a day. So idle closes in a row
back off: each one doubles the wait (30, 60, 120, 240 s) up to `segment_seconds`, where the
age rule takes over: a trickle settles at the age rule's 12 segments an hour after four
extra ones. A close by size (a busy crawl), or a page after a pause longer than
`segment_seconds` (new work, not a trickle), brings the wait back to `segment_idle_seconds`.
"""

from __future__ import annotations

from enum import Enum


class CloseKind(Enum):
    SIZE = "size"
    AGE = "age"
    IDLE = "idle"


class IdleClose:
    """The idle wait and its back-off; times are monotonic seconds passed in by the caller."""

    def __init__(self, idle_s: float, cap_s: float, *, now: float) -> None:
        self.base_s = idle_s  # 0: no idle closes
        self.cap_s = max(cap_s, idle_s)
        self.wait_s = idle_s
        self.last_page_at = now

    def saw_pages(self, now: float) -> None:
        """Pages were archived since the last look."""
        if now - self.last_page_at >= self.cap_s:  # a pause, then new work: not a trickle
            self.wait_s = self.base_s
        self.last_page_at = now

    def due(self, now: float) -> bool:
        """Whether the crawl has been quiet long enough to close a segment holding pages."""
        return self.base_s > 0 and now - self.last_page_at >= self.wait_s

    def idle_for(self, now: float) -> float:
        return now - self.last_page_at

    def closed(self, kind: CloseKind) -> None:
        if kind is CloseKind.IDLE:
            self.wait_s = min(self.wait_s * 2, self.cap_s)
        elif kind is CloseKind.SIZE:
            self.wait_s = self.base_s
