"""DomainClaimer: the Redis side of holding domains: claims, releases, renewals, checkpoints.

One task talks to Redis for all workers: each round trip releases the domains this process
is done with (their next fetch time and read offset) and leases as many due domains as it
has room for (up to `batch`), handing them to the HostDispatcher (host_dispatcher.py),
which feeds their URLs to the workers. Before a read offset moves, `checkpoint` makes the
handled URLs' results durable (index journal, visited records, discovered links), so a
crash can repeat a fetch but never lose one. Until a held host is released its lease is
renewed every `renew_every_s` with the durable watermark.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from redis.exceptions import RedisError

from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.script_guard import FrontierLost
from frontier_service.frontier.state import Release, Renewal, Reschedule
from frontier_service.metrics import CrawlMetrics
from frontier_service.pages.claim_settings import ClaimSettings
from frontier_service.pages.held_host import HeldHost
from frontier_service.pages.host_dispatcher import HostDispatcher, OffsetSink

log = logging.getLogger(__name__)


class DomainClaimer:
    """Leases domains for `hosts` (up to `capacity` held at once) and sends back what they release."""

    def __init__(self, frontier: Frontier, owner: str, hosts: HostDispatcher, *,
                 metrics: CrawlMetrics, settings: ClaimSettings,
                 clock: Callable[[], float] = time.time,
                 checkpoint: Callable[[], Awaitable[None]] | None = None,
                 offsets: OffsetSink | None = None,
                 known_offset: Callable[[str], int] | None = None) -> None:
        self.frontier = frontier
        self.owner = owner
        self.hosts = hosts
        self.metrics = metrics
        self.settings = settings
        self.renew_every_s = min(settings.renew_every_s, frontier.config.lease_seconds / 4)
        self.clock = clock
        self.checkpoint = checkpoint  # makes the results of handled URLs durable first
        self.offsets = offsets
        self.known_offset = known_offset  # the checkpoints' offset of a domain
        self.idle_rounds = 0  # consecutive claims that found nothing due
        self._durable: list[Reschedule] = []  # checkpointed: sent with the next claim round
        # One checkpoint at a time: the releases one has taken are in `_durable` before
        # another looks (the shutdown's flush must not miss those the periodic one holds).
        self._checkpointing = asyncio.Lock()
        self._renewed_at = 0.0
        self._renew_ok_at = clock()

    # -- checkpoints and lease renewals ------------------------------------------------

    async def run_checkpoints(self, finished: asyncio.Event, every_s: float = 0.05) -> None:
        """Every `every_s`: make handled URLs' results durable, then queue the releases;
        renew the held hosts' leases (with their durable watermarks) every renew_every_s.

        Separate from the claim rounds, so a slow checkpoint (a big add_urls) delays only
        the releases (whose next fetch is a politeness delay away anyway), never claims.
        """
        failing = ""  # the error the checkpoints keep failing with, said once
        while not finished.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finished.wait(), every_s)
            try:
                moved = await self._checkpoint()
            except OSError as exc:  # a full disk: one line, not a traceback every round
                if str(exc) != failing:
                    log.warning("checkpoint failed (%s); retrying", exc)
                failing = str(exc)
                continue
            except Exception:
                log.exception("checkpoint failed; retrying")
                continue
            failing = ""
            if self.clock() - self._renewed_at >= self.renew_every_s:
                self._renewed_at = self.clock()
                moved = [host for host in self.hosts.held.values() if not host.lost]
            try:
                await self._renew(moved)
                self._renew_ok_at = self.clock()
            except FrontierLost:
                pass  # the claim loop rebuilds Redis; the rebuilt one holds no leases
            except (RedisError, OSError) as exc:
                log.warning("renewing leases failed (%s); retrying", exc)
                # Held hosts go on fetching while Redis is away, but not past their leases:
                # another process may take those domains once they run out.
                if self.clock() - self._renew_ok_at > self.frontier.config.lease_seconds / 2:
                    self.hosts.drop_leases()

    async def _checkpoint(self) -> list[HeldHost]:
        """Make handled URLs durable; returns the held hosts whose durable watermark moved."""
        async with self._checkpointing:
            return await self._checkpoint_now()

    async def _checkpoint_now(self) -> list[HeldHost]:
        marks = [(host, host.watermark) for host in self.hosts.held.values()
                 if host.watermark != host.durable]
        if not self.hosts.releases and not marks:
            return []
        batch, self.hosts.releases = self.hosts.releases, []
        pages = {host.domain: host.mark()[1] for host, _ in marks}
        began = time.monotonic()
        try:
            if self.checkpoint is not None:
                await self.checkpoint()
        except BaseException:
            self.hosts.releases = batch + self.hosts.releases
            for host, _ in marks:
                host.pages += pages[host.domain]
            raise
        for host, watermark in marks:
            host.durable = watermark
        if self.offsets is not None:
            for release, count in batch:
                self.offsets.advance(release.domain, release.new_read_offset, count)
            for host, watermark in marks:
                self.offsets.advance(host.domain, watermark, pages[host.domain])
        self._durable += [release for release, _ in batch]
        self.metrics.checkpoint_ms = int((time.monotonic() - began) * 1000)
        self.hosts.wake.set()
        return [host for host, _ in marks]

    async def _renew(self, hosts: list[HeldHost]) -> None:
        """Extend the leases of held hosts and raise their read offsets to the durable
        watermark (a crashed process's successor then repeats only what was not durable)."""
        hosts = [host for host in hosts if not host.lost]
        if not hosts:
            return
        renewed = await self.frontier.state.renew_many(
            self.owner, [(host.domain, max(host.durable, 0)) for host in hosts],
            self.clock(), lease_seconds=self.frontier.config.lease_seconds)
        for host, renewal in zip(hosts, renewed, strict=True):
            if self.hosts.held.get(host.domain) is not host:  # released meanwhile
                continue
            if renewal is Renewal.WANTED and not host.wanted:
                host.wanted = True  # another crawl waits: give it up after a turn
                self.hosts.pump(host)
            elif renewal is Renewal.LOST:
                self.metrics.leases_lost += 1
                host.lost = True
                log.warning("lease on %s was taken over; its URLs in flight may be fetched "
                            "again by the new owner", host.domain)
                self.hosts.pump(host)

    # -- claim rounds -----------------------------------------------------------------

    async def run(self, stopping: asyncio.Event) -> None:
        """Claim until `stopping`; then hand back what no worker started, and flush releases."""
        while not stopping.is_set():
            want = min(self.settings.batch, self.settings.capacity - self.hosts.outstanding)
            if want <= 0 and not self._durable and not self.hosts.exclusions:
                await self._sleep(stopping, 1.0)
                continue
            claimed = await self._round(max(want, 0))
            self.idle_rounds = 0 if claimed or self.hosts.held else self.idle_rounds + 1
            if claimed < want:  # not woken by releases: they ride along with the next round
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), self.settings.poll_s)
        await self.shutdown()

    async def shutdown(self) -> None:
        """Hand back queued (unstarted) URLs; release every host with nothing in flight."""
        self.hosts.close()
        await self.flush_releases()

    async def flush_releases(self, *, keep_offsets: bool = False) -> None:
        """Release idle held hosts; checkpoint and send every release now (shutdown).

        `keep_offsets` (no checkpoint can be written: the disk is full): release them at the
        read offsets Redis holds, the last durable ones; the URLs handled since, whose
        results are not durable, stay queued. Their domains are claimable at once, not only
        once their leases expire."""
        self.hosts.release_idle()
        await self._send_exclusions()
        if keep_offsets:  # a release never lowers Redis's read offset: 0 leaves it as it is
            async with self._checkpointing:  # (after the releases a checkpoint holds)
                undurable, self.hosts.releases = self.hosts.releases, []
                self._durable += [Reschedule(release.domain, release.next_fetch_at, 0)
                                  for release, _pages in undurable]
        else:
            await self._checkpoint()  # waits for a running one: its releases are sent too
        while self._durable:
            releases, self._durable = self._durable, []
            try:
                codes = await self.frontier.done_many(self.owner, releases, now=self.clock())
            except BaseException:
                self._durable = releases + self._durable
                raise
            self.metrics.leases_lost += sum(code is Release.LEASE_LOST for code in codes)

    async def _sleep(self, stopping: asyncio.Event, seconds: float) -> None:
        self.hosts.wake.clear()
        waiters = [asyncio.ensure_future(self.hosts.wake.wait()), asyncio.ensure_future(stopping.wait())]
        try:
            await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    def gauges(self) -> None:
        self.metrics.queued_domains = self.hosts.queue.qsize()
        self.metrics.releases_pending = len(self.hosts.releases) + len(self._durable)

    async def _round(self, want: int) -> int:
        began = time.monotonic()
        try:
            return await self._claim(want)
        finally:
            self.metrics.claim_round_ms = int((time.monotonic() - began) * 1000)

    async def _send_exclusions(self) -> None:
        # Before the releases: a release of an excluded domain retires it.
        exclusions = self.hosts.exclusions
        while exclusions:
            domain, reason = exclusions[0]
            await self.frontier.state.exclude(domain, reason)
            exclusions.pop(0)
            if self.offsets is not None:
                self.offsets.exclude(domain, reason)

    async def _claim(self, want: int) -> int:
        await self._send_exclusions()
        releases, self._durable = self._durable, []
        try:
            codes, domains = await self.frontier.release_and_claim(
                self.owner, releases, want, now=self.clock())
        except BaseException:
            self._durable = releases + self._durable
            raise
        self.metrics.claim_calls += 1
        self.metrics.leases_lost += sum(code is Release.LEASE_LOST for code in codes)
        if not domains:
            return 0
        self.metrics.claims += len(domains)
        await self._dispatch(domains)
        return len(domains)

    def _start_offset(self, domain: str, stored: int) -> int:
        """Redis's read offset, unless a checkpoint knows the domain got further: then Redis
        lost it (an evicted key recreated by an append, a Redis restored from an older copy)
        and the URLs in between were fetched already."""
        known = self.known_offset(domain) if self.known_offset is not None else 0
        if known <= stored:
            return stored
        self.metrics.frontier_repairs += 1
        log.warning("Redis's read offset of %s (%d) is behind its checkpoint (%d): Redis lost "
                    "it; resuming at the checkpoint", domain, stored, known)
        return known

    async def _dispatch(self, domains: list[str]) -> None:
        keys = self.frontier.state.keys
        async with self.frontier.redis.pipeline(transaction=False) as pipe:
            for domain in domains:
                pipe.hmget(keys.domain(domain), ["read_offset", "pages_fetched"])
            rows = await pipe.execute()
        now = self.clock()
        for domain, row in zip(domains, rows, strict=True):
            self.hosts.hold(domain, self._start_offset(domain, int(row[0] or 0)),
                            stored_pages=int(row[1] or 0), now=now)
