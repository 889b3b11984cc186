"""HeldHost: a leased domain this process feeds from its frontier file, and what one URL of
it came to (Outcome).

Giving a domain back to Redis after every URL costs a checkpoint and a claim round trip
(tens of milliseconds) before its next request. With a delay shorter than that, or several
requests in flight to one host, the process keeps the lease instead: up to `limit` URLs in
flight, request starts `delay` apart, the next URLs read from the file here. Redis learns
the progress through lease renewals carrying the watermark, the offset before which every
URL is handled; a crash repeats at most the URLs past it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from frontier_service.frontier.frontier_record import FrontierRecord


@dataclass(frozen=True, slots=True)
class Outcome:
    """When the domain may be fetched again, and the offset to release it at.

    `offset` is the URL's end offset once it is handled, its start offset when it must be
    tried again. `solo`: this host takes one request at a time (robots.txt not known yet, a
    Crawl-delay, or a failing host). `retired`: the host was excluded; fetch nothing more.
    """

    next_fetch_at: float
    offset: int
    solo: bool = False
    retired: str = ""  # why the host was excluded (empty: it was not)
    requested: bool = True  # False: nothing was sent (robots.txt disallows it, invalid URL)
    delay_s: float = 0.0  # the host's delay: between request starts, and after a response


@dataclass(frozen=True, slots=True)
class Claimed:
    """A URL of a leased domain to fetch; it is handled once `end_offset` is passed."""

    domain: str
    record: FrontierRecord
    start_offset: int
    end_offset: int
    host: HeldHost | None = field(default=None, compare=False, repr=False)


@dataclass(eq=False, slots=True)
class HeldHost:
    """The URLs of one leased domain: dispatched, handled and handed back.

    URLs tile the file: each one starts where the one before ended, so the watermark moves
    over the handled ones in order, and a URL handled out of order waits in `finished`.
    """

    domain: str
    watermark: int  # every URL before this offset is handled
    stored_pages: int = 0  # pages_fetched in Redis when claimed
    limit: int = 1  # requests in flight at most: 1 until robots.txt says there is no Crawl-delay
    delay: float = 0.0
    next_start_at: float = 0.0
    last_request: float = 0.0  # when the latest request known to be sent started
    floor: float = 0.0  # one at a time: the last response's time plus the delay
    next_read: int = -1  # file offset of the next URL not dispatched yet (-1: the watermark)
    in_flight: dict[int, int] = field(default_factory=dict)  # start -> end offset
    started: dict[int, float] = field(default_factory=dict)  # start offset -> when dispatched
    finished: dict[int, int] = field(default_factory=dict)  # handled past the watermark
    returned: list[Claimed] = field(default_factory=list)  # handed back: dispatched first
    queued: int = 0  # dispatched, not yet taken by a worker
    pages: int = 0  # URLs handled since the last durable mark
    durable: int = -1  # the watermark last made durable (-1: none yet)
    drained: bool = False  # the file had no complete line left at the last read
    lost: bool = False  # the lease was taken over: dispatch nothing more
    stopped: bool = False  # excluded (page budget, unreachable): dispatch nothing more
    held_since: float = 0.0  # when this process leased it
    wanted: bool = False  # other crawls wait for the host: give it up after a turn
    timer: asyncio.TimerHandle | None = None

    def __post_init__(self) -> None:
        if self.next_read < 0:
            self.next_read = self.watermark

    def dispatched(self, item: Claimed, now: float) -> None:
        """Queued for a worker: nothing more goes out until a worker has begun it."""
        self.in_flight[item.start_offset] = item.end_offset
        self.started[item.start_offset] = now
        self.queued += 1
        self.next_start_at = now + self.delay

    def begun(self, item: Claimed, now: float) -> None:
        """A worker took the URL: its request starts now, the next one a delay later."""
        self.queued -= 1
        self.started[item.start_offset] = now
        self.next_start_at = max(self.next_start_at, now + self.delay)

    def answered(self, item: Claimed, outcome: Outcome, now: float, *, per_host: int) -> None:
        """Learn the host's delay and limit from a URL's outcome; when the next may start.

        Request starts stay a delay apart, counted from the latest that may have been sent
        (the ones in flight included); one at a time, also a delay after the response.
        A URL that sent nothing (disallowed by robots.txt) costs no delay.
        """
        started = self.started.pop(item.start_offset, now)
        if outcome.requested:
            self.last_request = max(self.last_request, started)
            self.delay = outcome.delay_s
            self.floor = max(self.floor, outcome.next_fetch_at)
        self.limit = 1 if outcome.solo else per_host
        latest = max(self.started.values(), default=self.last_request)
        self.next_start_at = max(latest, self.last_request) + self.delay
        if self.limit == 1:
            self.next_start_at = max(self.next_start_at, self.floor)

    def handled(self, start: int, end: int) -> None:
        """The URL [start, end) is done (or skipped): move the watermark over what is done."""
        self.in_flight.pop(start, None)
        self.finished[start] = end
        self.pages += 1
        while self.watermark in self.finished:
            self.watermark = self.finished.pop(self.watermark)

    def skipped(self, start: int, end: int) -> None:
        """Bytes with no URL in them (torn or corrupt lines): done without a fetch."""
        self.handled(start, end)
        self.pages -= 1

    def hand_back(self, item: Claimed, *, unstarted: bool = False) -> None:
        """The URL was not handled: it is the next to go (in file order)."""
        if unstarted:
            self.queued -= 1
        self.in_flight.pop(item.start_offset, None)
        self.started.pop(item.start_offset, None)
        self.returned.append(item)
        self.returned.sort(key=lambda claimed: claimed.start_offset)

    @property
    def idle(self) -> bool:
        return not self.in_flight

    def mark(self) -> tuple[int, int]:
        """(watermark, pages handled since the last mark); resets the page count."""
        pages, self.pages = self.pages, 0
        return self.watermark, pages
