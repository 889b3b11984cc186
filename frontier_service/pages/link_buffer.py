"""LinkBuffer: discovered URLs batched across pages into few, large `add_urls` calls.

A page yields ~50 links and `add_urls` costs a Redis round trip, a Lua call and file
appends per call, so links wait here until `flush_urls` have gathered or `flush_s` have
passed; meanwhile the crawler's checkpoint makes them durable in a LinkJournal. Before
buffering, each link is canonicalized, checked against the scope, and dropped if this
process offered it recently (most links of a site repeat from page to page; the seen
filter would drop them too, but only after a round trip).

Pages can find new links faster than `add_urls` takes them (a crawl of many hosts, whose
pages are mostly new links): the links waiting, buffered and in the batch being added, are
capped at `max_pending`, and `room` holds the workers back until the frontier has taken
enough. Without it they piled up (~500 bytes a link): a crawler's RSS rose by 50 MB every
10 s of a 50,000-host soak.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from archive_pipelines.canonical_urls import try_canonical_url_and_domain
from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.frontier_record import ResourceType
from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.flush_loop import flush_until
from frontier_service.pages.link_journal import Entry, LinkJournal
from frontier_service.scope.crawl_scope import Scope
from frontier_service.scope.drops import UrlDrops, invalid_reason, scope_reason

log = logging.getLogger(__name__)


class RecentlyOffered:
    """Fingerprints offered lately: a direct-mapped table of 8-byte tags, fixed in size.

    A fingerprint's first 4 bytes pick its slot and its next 8 bytes are the tag kept there;
    a new fingerprint takes its slot from whatever was there (the one forgotten is offered
    again at most once more, and the seen filter drops it then). A wrong "offered lately"
    needs another fingerprint with the same slot and the same 64-bit tag: ~2^-64 a check.
    Memory: 8 bytes a slot, allocated at start (32 MB at the default 2^22 slots), so a
    crawler's RSS does not rise with the links it meets; two generations of 500,000 in
    Python sets (~113 bytes a fingerprint) took ~110 MB and filled over a 50,000-host soak.
    """

    def __init__(self, slots: int = 1 << 22) -> None:
        if slots <= 0 or slots & (slots - 1):
            raise ValueError(f"slots must be a power of two, not {slots}")
        self.slots = slots
        self._mask = slots - 1
        self._table = bytearray(8 * slots)

    def check_and_add(self, fingerprint: bytes) -> bool:
        """True if the fingerprint was offered lately; remembers it either way."""
        at = (int.from_bytes(fingerprint[:4], "little") & self._mask) << 3
        tag = fingerprint[4:12]
        if self._table[at:at + 8] == tag:
            return True
        self._table[at:at + 8] = tag
        return False


class LinkBuffer:
    """Buffers in-scope URLs (with depth) and flushes them to the frontier."""

    def __init__(self, frontier: Frontier, scope: Scope, metrics: CrawlMetrics, *,
                 flush_urls: int = 5_000, flush_s: float = 0.2,
                 recent_slots: int = 1 << 22, chunk_urls: int = 2_000,
                 max_pending: int = 100_000, journal: LinkJournal | None = None,
                 drops: UrlDrops | None = None) -> None:
        self.frontier = frontier
        self.drops = drops or UrlDrops(metrics)
        self.scope = scope
        self.metrics = metrics
        self.flush_urls = flush_urls
        self.flush_s = flush_s
        self.chunk_urls = chunk_urls
        self.max_pending = max(max_pending, 1)
        self.recent = RecentlyOffered(recent_slots)
        self._pending: list[Entry] = []  # ((canonical, domain, fingerprint), depth[, kind])
        self.journal = journal
        self._journaled = 0  # _pending[:_journaled] are in the journal
        self._full = asyncio.Event()
        self._lock = asyncio.Lock()
        self._adding = 0  # links of the batch being flushed not added yet
        self._room = asyncio.Event()  # set while fewer than max_pending links wait
        self._room.set()
        self._unbounded = False  # the crawl is stopping: `room` holds nobody back
        # A full disk: nothing more goes to the frontier, whose seen filter would take a
        # URL that its file then has no room for (lost). Links wait in the journal instead.
        self.holding = False

    def hold(self) -> None:
        """A full disk or a failing Redis: nothing more goes to the frontier; links wait in
        the journal (for the next run), and `room` holds no worker back."""
        self.holding = True
        self._check_room()

    @property
    def pending(self) -> int:
        return len(self._pending)

    @property
    def backlog(self) -> int:
        """Links not in the frontier yet: buffered, and in the batch being added."""
        return len(self._pending) + self._adding

    async def room(self) -> None:
        """Wait while `max_pending` links wait for the frontier (a worker asks before it
        takes a URL). Never waits while holding (they wait in the journal) or stopping."""
        while not self._room.is_set():
            self._full.set()  # flush now
            await self._room.wait()

    def stop_holding_back(self) -> None:
        """The crawl is stopping: `room` returns at once from now on (the drain must reach
        every worker; the final flush adds what is left)."""
        self._unbounded = True
        self._check_room()

    def _check_room(self) -> None:
        if self._unbounded or self.holding or self.backlog < self.max_pending:
            self._room.set()
        else:
            self._room.clear()

    def journal_pending(self) -> None:
        """Make every buffered link durable (one append): the checkpoint before a release."""
        if self.journal is not None and self._journaled < len(self._pending):
            self.journal.append(self._pending[self._journaled:])
            self._journaled = len(self._pending)

    def add(self, urls: Iterable[str], depth: int, *, found_on: str = "",
            kind: ResourceType = ResourceType.DOCUMENT) -> int:
        """Buffer the in-scope, not recently offered URLs, to be fetched as `kind`; returns
        how many were buffered. The others are counted as dropped, by reason, against
        `found_on` (the page's host)."""
        metrics = self.metrics
        refusal = self.scope.refusal
        check = self.recent.check_and_add
        pending = self._pending
        before = len(pending)
        for url in urls:
            metrics.links_found += 1
            parsed = try_canonical_url_and_domain(url)
            if parsed is None:
                metrics.links_invalid += 1
                self.drops.drop(invalid_reason(url), found_on, url)
                continue
            refused = refusal(parsed[1], depth)
            if refused is not None:
                metrics.links_out_of_scope += 1
                self.drops.drop(scope_reason(refused), found_on, url)
                continue
            if check(parsed[2]):
                metrics.links_repeated += 1
                continue
            pending.append((parsed, depth) if kind is ResourceType.DOCUMENT
                           else (parsed, depth, kind))
        if len(pending) >= self.flush_urls:
            self._full.set()
        if len(pending) + self._adding >= self.max_pending:
            self._check_room()
        return len(pending) - before

    async def flush(self) -> int:
        """Send everything buffered to the frontier; returns how many URLs were new."""
        async with self._lock:
            if self.holding:
                self._full.clear()
                return 0
            # The whole batch in journal files <= `covered` (journaled before it is taken: a
            # checkpoint during the add below journals only what is buffered after it).
            self.journal_pending()
            batch, self._pending = self._pending, []
            self._full.clear()
            if not batch:
                return 0
            covered = self.journal.rotate() if self.journal is not None else -1
            self._journaled = 0
            added = 0
            # Chunks: each add is a Lua call that holds Redis; small ones let the claims
            # of other tasks run in between.
            for start in range(0, len(batch), self.chunk_urls):
                chunk = batch[start:start + self.chunk_urls]
                self._adding = len(batch) - start
                try:
                    result = await self.frontier.add_canonical(chunk)
                except BaseException:
                    self._adding = 0
                    self._pending = batch[start:] + self._pending  # the next flush retries
                    self._journaled = 0  # journaled again: a duplicate line is harmless
                    raise
                self._adding = len(batch) - start - len(chunk)
                self._check_room()
                self.metrics.urls_offered += len(chunk)
                self.metrics.urls_added += result.added
                added += result.added
            if self.journal is not None:
                self.journal.drop_through(covered)
            return added

    async def run(self, finished: asyncio.Event,
                  on_error: Callable[[Exception], object] | None = None) -> None:
        """Flush every flush_s, or as soon as flush_urls are waiting, until `finished`."""
        await flush_until(finished, self.flush, full=self._full, every_s=self.flush_s, log=log,
                          failure="adding discovered URLs to the frontier failed",
                          on_error=on_error)
