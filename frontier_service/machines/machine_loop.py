"""MachineLoop: one machine's part in a crawl shared by several (see the package docstring).

Every process of the machine renews the machine's lease (the heartbeat), which takes its
share of the free slots and of those whose machine stopped renewing; each reads the
inboxes of the machine's slots. The leader (the machine's first process) also:
- at start, sends on what its files hold for domains it does not own (any more), and marks
  the domains of its slots that no machine owned yet (queued before machines) as its own;
- during the crawl, gives slots to a machine that holds fewer than its share, and sends on
  the lines of its domains that another machine took over while this one was away;
- at a stop while others run, lets go of its slots and sends on all it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path

from redis.exceptions import RedisError

from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.machine_state import Heartbeat
from frontier_service.machines.send_on import SendReport, local_domains, send_on

log = logging.getLogger(__name__)

# While slots change hands (this machine hands some over, or holds fewer than its share
# since it joined or the machines changed), it beats this often rather than every_s: a
# joining machine otherwise waited a beat for the others to see it, then beats more for
# each slot freed once its domains' leases ended, its workers idle meanwhile.
SETTLING_EVERY_S = 0.25

# A machine's claimer asks again at most this often after a round that filled fewer than it
# wanted (one machine: claim_poll_s, 0.01 s). A round passes the other machines' due domains
# too (the ready queue is the crawl's) and finds a share of what comes due: polled every
# 0.01 s, the rounds cost two machines 1.13-1.20x the CPU per page of one process, 1.02x at
# 0.03 s, the pages per second unchanged (bench --case machines, reduced).
MACHINE_CLAIM_POLL_S = 0.03


class MachineLoop:
    def __init__(self, frontier: Frontier, root: Path, *, lease_seconds: float,
                 leader: bool) -> None:
        assert frontier.machine is not None
        self.frontier = frontier
        self.machine = frontier.machine
        self.root = root
        self.lease_seconds = lease_seconds
        self.every_s = max(0.2, min(1.0, lease_seconds / 6))
        self.settle_s = 10 * self.every_s  # beats fast at most this long after a change
        self.leader = leader
        self.sent = SendReport(busy=[])
        self.slots_given = 0
        self.last: Heartbeat | None = None
        self._settle_until = 0.0  # (monotonic) fast beats while short of the share till then
        # How far this machine's checkpoints know a domain fetched (FrontierRecovery).
        self.known_offset: Callable[[str], int] | None = None

    async def start(self) -> Heartbeat:
        """Join: renew the lease, take slots, make their inboxes' consumer group."""
        beat = await self._beat()
        log.info("machine %s: %d of %d slots, %d machine(s) live", self.machine.machine,
                 len(beat.mine), self.machine.slots, beat.live)
        return beat

    async def send_strays(self) -> SendReport:
        """Leader, at start (before any claim): every local file's lines that Redis does not
        say are this machine's to fetch go to their owners' inboxes."""
        domains = await asyncio.to_thread(local_domains, self.root)
        mine = self.machine.mine
        strays = [domain for domain, _ in domains if self.machine.slot(domain) not in mine]
        adopted = await self.machine.adopt(
            [domain for domain, _ in domains if self.machine.slot(domain) in mine])
        if adopted:
            log.info("machine %s: %d domains queued before machines crawled are its own",
                     self.machine.machine, adopted)
        report = await send_on(self.frontier, strays, known_offset=self.known_offset)
        report.add(await self.send_orphans())
        self.sent.add(report)
        if report.domains_sent:
            log.info("machine %s sent on %d URLs of %d domains it does not own",
                     self.machine.machine, report.lines_sent, report.domains_sent)
        return report

    async def send_orphans(self) -> SendReport:
        """The domains another machine took over while this one was away (or after it gave
        their slot up): their unfetched lines, which only this machine's files hold."""
        key = self.frontier.state.keys.orphans(self.machine.machine)
        domains = [d.decode() if isinstance(d, bytes) else d
                   async for d in self.frontier.redis.sscan_iter(key, count=1000)]
        return await send_on(self.frontier, domains, known_offset=self.known_offset)

    async def run(self, finished: asyncio.Event) -> None:
        """Beat (the leader balancing), and, the leader, send on the orphans: apart, for a
        long send (a thousand domains taken over) must not hold the beats back past the
        lease (the others then took every slot of this machine, and it had to take half of
        them back)."""
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self._beats(finished), name="machine-beats")
            if self.leader:
                tg.create_task(self._send_orphans_until(finished), name="machine-orphans")

    async def _beats(self, finished: asyncio.Event) -> None:
        while not await _wait(finished, self.next_beat_in()):
            try:
                beat = await self._beat()
                if self.leader:
                    await self._balance(beat)
            except (RedisError, OSError) as exc:
                log.warning("machine heartbeat failed (%s); retrying", exc)

    async def _send_orphans_until(self, finished: asyncio.Event) -> None:
        while not await _wait(finished, self.every_s):
            try:
                self.sent.add(await self.send_orphans())
            except (RedisError, OSError) as exc:
                log.warning("sending on the URLs of domains taken over failed (%s); "
                            "retrying", exc)

    def next_beat_in(self) -> float:
        """Seconds to the next beat: SETTLING_EVERY_S while this machine hands slots over
        or should, or, for a while after it joined or the machines changed, holds fewer
        than its share; every_s otherwise."""
        beat = self.last
        if beat is None:
            return self.every_s
        handing_over = bool(beat.leaving) or beat.give > 0
        short = beat.live > 1 and len(beat.mine) < self.machine.slots // beat.live
        if handing_over or (short and time.monotonic() < self._settle_until):
            return min(self.every_s, SETTLING_EVERY_S)
        return self.every_s

    async def stop(self, *, others_run: bool | None = None) -> SendReport:
        """Leader, after the crawl drained: if other machines run, give them every slot and
        send on every unfetched line; then end this machine's lease."""
        report = SendReport(busy=[])
        if not self.leader:
            return report
        if others_run is None:
            beat = await self._beat()
            others_run = beat.live > 1
        if others_run and self.machine.mine:
            mine = sorted(self.machine.mine)
            await self.machine.leave(mine)
            await self.machine.free(mine)
            self.machine.mine = frozenset()
            domains = await asyncio.to_thread(local_domains, self.root)
            report = await send_on(self.frontier, [domain for domain, _ in domains],
                                   known_offset=self.known_offset)
            log.info("machine %s left the crawl: its %d slots freed, %d URLs of %d domains "
                     "sent on", self.machine.machine, len(mine), report.lines_sent,
                     report.domains_sent)
        await self.machine.leave_crawl()
        return report

    async def _beat(self) -> Heartbeat:
        before = self.machine.mine
        beat = await self.machine.heartbeat(time.time(), lease_seconds=self.lease_seconds)
        new = sorted(beat.mine - before)
        if new:
            await self.machine.ensure_groups(new)
        if self.last is None or new or beat.live != self.last.live:
            self._settle_until = time.monotonic() + self.settle_s
        self.last = beat
        return beat

    async def _balance(self, beat: Heartbeat) -> None:
        """Give `beat.give` slots to the machines short of their share: they are marked as
        being handed over (nobody claims their domains; new URLs wait in their inboxes),
        and freed once no domain of theirs is leased here (those finish their turn first);
        the others' lines are sent on when their new owner finds them (send_orphans)."""
        slots = list(beat.leaving) + sorted(beat.mine, reverse=True)[:beat.give]
        if not slots:
            return
        leaving = await self.machine.leave(slots[len(beat.leaving):])
        self.machine.mine = self.machine.mine - set(leaving)
        # Freed at once (as before), the new owner's first append to a domain leased here
        # took the lease over, and the URLs our worker had in flight were fetched twice.
        busy = await self.machine.leased_slots(time.time())
        freed = await self.machine.free([s for s in [*beat.leaving, *leaving] if s not in busy])
        self.slots_given += freed
        if freed:
            log.info("machine %s gave %d slots to machines short of their share",
                     self.machine.machine, freed)


async def _wait(finished: asyncio.Event, seconds: float) -> bool:
    """Wait `seconds` or until `finished`; whether it is."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(finished.wait(), seconds)
    return finished.is_set()
