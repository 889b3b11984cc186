"""The Redis side of several machines crawling one frontier: the slot map and its leases,
appends by a slot's owner, the inboxes that carry URLs to the owner of their domains, and
handing a domain's unfetched lines on (the scripts are in lua_machines.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from frontier_service.frontier import lua_machines
from frontier_service.frontier.keys import FrontierKeys
from frontier_service.frontier.script_guard import LOST_REPLY, FrontierLost, guarded
from frontier_service.frontier.slots import MAX_SLOTS, slot_of

GROUP = "owner"  # the consumer group of every inbox: the processes of the slot's owner
CHECK = "?"  # an inbox field `?{domain}`: lines to check against the owner's file first
_MACHINE = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def check_machine_name(name: str) -> str:
    if _MACHINE.fullmatch(name) is None:
        raise ValueError(f"machine name {name!r}: 1-64 letters, digits, '.', '_' or '-'")
    return name


class SlotsMismatch(ValueError):
    """The crawl was started with another number of slots."""


@dataclass(frozen=True, slots=True)
class Heartbeat:
    mine: frozenset[int]
    leaving: tuple[int, ...]  # slots this machine is handing over
    give: int  # slots it should hand over: a live machine holds fewer than its share
    live: int  # machines whose lease runs


@dataclass(frozen=True, slots=True)
class MachinesView:
    """Who owns what, for `frontier-service machines`."""

    leases: dict[str, float]  # machine -> its lease's end
    slots: dict[str, list[int]]  # machine -> its slots (`>m`: handing over)
    orphaned_bytes: dict[str, int]  # machine -> unfetched bytes only its disk holds
    orphaned_domains: dict[str, int]
    free_slots: list[int] = field(default_factory=list)
    slot_count: int = 0


class MachineState:
    """One machine's view of a crawl's slots (`machine` names it; `slots` is fixed per crawl)."""

    def __init__(self, redis: Redis, keys: FrontierKeys, *, machine: str, slots: int,
                 prefixes: Sequence[str]) -> None:
        if not 1 <= slots <= MAX_SLOTS:
            raise ValueError(f"slots must be in 1..{MAX_SLOTS}, got {slots}")
        self.redis = redis
        self.keys = keys
        self.machine = check_machine_name(machine)
        self.slots = slots
        self.mine: frozenset[int] = frozenset()  # as of the last heartbeat
        self._prefixes = list(prefixes)  # the domain prefix and host gate prefix (ARGV 1-2)
        self._state_keys = keys.coordination
        self._heartbeat = redis.register_script(lua_machines.HEARTBEAT)
        self._leave = redis.register_script(lua_machines.LEAVE)
        self._free = redis.register_script(lua_machines.FREE)
        self._record = guarded(redis.register_script(lua_machines.RECORD_OWNED_APPENDS))
        self._detach_script = redis.register_script(lua_machines.DETACH_SEND)
        self._detach = guarded(self._detach_script)
        self._adopt = redis.register_script(lua_machines.ADOPT)

    def guard_epoch(self) -> None:
        self._state_keys = [*self.keys.coordination, self.keys.epoch]

    def slot(self, domain: str) -> int:
        return slot_of(domain, self.slots)

    async def heartbeat(self, now: float, *, lease_seconds: float) -> Heartbeat:
        """Renew this machine's lease and take its share of free or abandoned slots."""
        k = self.keys
        try:
            mine, leaving, give, live = await self._heartbeat(
                keys=[k.machines, k.slotmap, k.slot_count, k.counters],
                args=[self.machine, repr(now), repr(lease_seconds), self.slots])
        except ResponseError as exc:
            if "SLOTS" in str(exc):
                raise SlotsMismatch(str(exc).split("SLOTS ", 1)[-1]) from None
            raise
        self.mine = frozenset(int(s) for s in mine)
        return Heartbeat(self.mine, tuple(int(s) for s in leaving), int(give), int(live))

    async def ensure_groups(self, slots: Sequence[int]) -> None:
        """The owner's consumer group on these slots' inboxes (from their first entry)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for slot in slots:
                pipe.xgroup_create(self.keys.inbox(slot), GROUP, id="0", mkstream=True)
            for result in await pipe.execute(raise_on_error=False):
                if isinstance(result, Exception) and "BUSYGROUP" not in str(result):
                    raise result

    async def leave(self, slots: Sequence[int]) -> list[int]:
        """Start handing these slots over; returns those that were ours."""
        if not slots:
            return []
        out = await self._leave(keys=[self.keys.slotmap], args=[self.machine, *slots])
        return [int(s) for s in out]

    async def free(self, slots: Sequence[int]) -> int:
        if not slots:
            return 0
        return int(await self._free(keys=[self.keys.slotmap], args=[self.machine, *slots]))

    async def record_owned(self, now: float, appends: Sequence[tuple[str, int, int, int]], *,
                           offered: int = 0, ack: Sequence[tuple[str, str]] = ()
                           ) -> tuple[int, list[str]]:
        """Record appends (domain, start, end, urls) to this machine's files; returns (domains
        readied, domains refused because their slot is not ours). `ack`: (inbox, entry id)s
        acknowledged in the same step when nothing was refused."""
        k = self.keys
        blob = "".join(f"{d} {start} {end} {urls}\n" for d, start, end, urls in appends)
        acks = "".join(f"{stream} {entry}\n" for stream, entry in ack)
        readied, refused = await self._record(
            keys=self._state_keys,
            args=[*self._prefixes, repr(float(now)), blob, offered, self.machine, k.slotmap,
                  self.slots, k.orphaned, k.orphans(""), acks, "", GROUP])
        return int(readied), [_text(d) for d in refused]

    async def send(self, lines_by_domain: Mapping[str, bytes], *, check: bool = False) -> int:
        """Queue frontier lines for the owners of their domains' slots (one stream entry per
        slot); returns the entries written. `check`: the owner first drops the lines whose
        URL its file already holds (CHECK marks the domain)."""
        by_slot: dict[int, dict[Any, Any]] = {}
        for domain, lines in lines_by_domain.items():
            by_slot.setdefault(self.slot(domain), {})[CHECK + domain if check else domain] = lines
        if not by_slot:
            return 0
        async with self.redis.pipeline(transaction=False) as pipe:
            for slot, fields in by_slot.items():
                pipe.xadd(self.keys.inbox(slot), fields)
            await pipe.execute()
        return len(by_slot)

    async def detach_send(self, domain: str, *, start: int, end: int, lines: bytes) -> int:
        """Send this machine's unfetched lines [start, end) of a domain to its slot's inbox
        and let go of it: 1 sent, 0 leased now, -1 the range changed, 2 nothing of ours."""
        k = self.keys
        return int(await self._detach(
            keys=self._state_keys,
            args=[*self._prefixes, self.machine, domain, start, end, lines,
                  k.inbox(self.slot(domain)), k.orphaned, k.orphans("")]))

    async def detach_send_many(self, sends: Sequence[tuple[str, int, int, bytes]]) -> list[int]:
        """detach_send for many (domain, start, end, lines), pipelined (each is still one
        atomic step); their codes, in order."""
        if not sends:
            return []
        k = self.keys
        async with self.redis.pipeline(transaction=False) as pipe:
            for domain, start, end, lines in sends:
                await self._detach_script(
                    keys=self._state_keys,
                    args=[*self._prefixes, self.machine, domain, start, end, lines,
                          k.inbox(self.slot(domain)), k.orphaned, k.orphans("")], client=pipe)
            try:
                codes = await pipe.execute()
            except ResponseError as exc:
                if LOST_REPLY in str(exc):
                    raise FrontierLost(str(exc)) from None
                raise
        return [int(code) for code in codes]

    async def adopt(self, domains: Sequence[str]) -> int:
        """Mark the domains whose hash names no machine as this machine's (their files are
        here); returns how many were."""
        adopted = 0
        for start in range(0, len(domains), 2000):
            blob = "".join(f"{d}\n" for d in domains[start:start + 2000])
            adopted += int(await self._adopt(keys=[], args=[self._prefixes[0], self.machine, blob]))
        return adopted

    async def held_range(self, domain: str) -> tuple[int, int] | None:
        """The range [read_offset, size) of a domain that Redis says this machine's file
        holds unfetched: as the domain's owner of record, or noted when another took it."""
        return (await self.held_ranges([domain]))[0]

    async def held_ranges(self, domains: Sequence[str]) -> list[tuple[int, int] | None]:
        """held_range for many domains, in one round trip."""
        fields = ["m", "read_offset", "size", f"ro@{self.machine}"]
        async with self.redis.pipeline(transaction=False) as pipe:
            for domain in domains:
                pipe.hmget(self.keys.domain(domain), fields)
            rows = await pipe.execute()
        return [self._held(row) for row in rows]

    def _held(self, row: list[Any]) -> tuple[int, int] | None:
        """A domain's unfetched range in this machine's file, from its (m, ro, size, noted)
        fields; None when its lines are not here."""
        m, ro, size, noted = row
        if noted is not None:
            start, end = _text(noted).split()
            return int(start), int(end)
        if size is not None and (m is None or _text(m) == self.machine):
            return int(ro or 0), int(size)
        return None

    async def leased_slots(self, now: float) -> set[int]:
        """The slots with a domain whose lease runs (only a slot's owner claims)."""
        leased = await self.redis.zrangebyscore(self.keys.leases, repr(now), "+inf")
        return {self.slot(_text(domain)) for domain in leased}  # type: ignore[arg-type]

    async def inbox_lengths(self) -> int:
        """Entries waiting in every slot's inbox."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for slot in range(self.slots):
                pipe.xlen(self.keys.inbox(slot))
            return sum(int(n) for n in await pipe.execute())

    async def leave_crawl(self) -> None:
        """This machine stops: its lease ends now (its slots go to the others at their next
        heartbeat; whatever its files still hold waits for it)."""
        await self.redis.hdel(self.keys.machines, self.machine)


async def machines_view(redis: Redis, keys: FrontierKeys) -> MachinesView:
    leases, slotmap, orphaned, count = await _gather(redis, keys)
    slots: dict[str, list[int]] = {}
    for slot, owner in sorted(slotmap.items(), key=lambda item: int(item[0])):
        slots.setdefault(_text(owner), []).append(int(slot))
    machines = {_text(m) for m in leases} | {m.lstrip(">") for m in slots}
    domains = {}
    for machine in sorted(machines | {_text(m) for m in orphaned}):
        domains[machine] = int(await redis.scard(keys.orphans(machine)))
    taken = {int(s) for s in slotmap}
    total = int(count or 0)
    return MachinesView({_text(m): float(v) for m, v in leases.items()}, slots,
                        {_text(m): int(v) for m, v in orphaned.items()}, domains,
                        [s for s in range(total) if s not in taken], total)


async def forget_machine(redis: Redis, keys: FrontierKeys, machine: str) -> tuple[int, int]:
    """Declare a machine lost for good: its lease and slots go, and what only its disk held
    is counted as lost (`urls_lost_bytes`, `domains_lost`). Returns (domains, bytes)."""
    lost = int(await redis.hget(keys.orphaned, machine) or 0)
    domains = int(await redis.scard(keys.orphans(machine)))
    async with redis.pipeline(transaction=True) as pipe:
        pipe.hdel(keys.machines, machine)
        pipe.hdel(keys.orphaned, machine)
        pipe.delete(keys.orphans(machine))
        pipe.hincrby(keys.counters, "bytes_lost_with_machines", lost)
        pipe.hincrby(keys.counters, "domains_lost_with_machines", domains)
        await pipe.execute()
    slotmap = await redis.hgetall(keys.slotmap)
    mine = [s for s, owner in slotmap.items() if _text(owner).lstrip(">") == machine]
    if mine:
        await redis.hdel(keys.slotmap, *mine)
    return domains, lost


async def _gather(redis: Redis, keys: FrontierKeys) -> list:
    async with redis.pipeline(transaction=False) as pipe:
        pipe.hgetall(keys.machines)
        pipe.hgetall(keys.slotmap)
        pipe.hgetall(keys.orphaned)
        pipe.get(keys.slot_count)
        return await pipe.execute()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
