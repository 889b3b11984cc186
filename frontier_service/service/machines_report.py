"""`frontier-service machines`: who crawls a crawl shared by several machines, and what the
disk of a machine that is away holds that no other machine can fetch."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from frontier_service.frontier.machine_state import forget_machine, machines_view
from frontier_service.service.crawler_parts import open_frontier
from frontier_service.service.crawler_settings import CrawlerSettings

_COUNTERS = ("slots_taken_over", "domains_orphaned", "domains_recovered", "domains_handed_over",
             "domains_lost_with_machines", "bytes_lost_with_machines")


@dataclass
class MachineLine:
    name: str
    live: bool
    lease_left_s: float  # negative: away this long
    slots: int
    handing_over: int
    orphaned_domains: int
    orphaned_bytes: int
    orphaned_urls: int  # estimated from the crawl's bytes per queued URL


@dataclass
class MachinesReport:
    crawl: str
    slot_count: int
    free_slots: int
    machines: list[MachineLine]
    counters: dict[str, int]
    forgotten: dict[str, int] = field(default_factory=dict)
    missing: str = ""  # why the command failed

    def as_dict(self) -> dict[str, Any]:
        return {"crawl": self.crawl, "slots": self.slot_count, "free_slots": self.free_slots,
                "machines": [vars(line) for line in self.machines], "counters": self.counters,
                "forgotten": self.forgotten, "error": self.missing}

    def text(self) -> str:
        if not self.slot_count:
            return f"crawl {self.crawl!r} is not run by several machines (no --machine run yet)"
        lines = [f"crawl {self.crawl!r}: {self.slot_count} slots, {self.free_slots} free"]
        for m in self.machines:
            state = (f"live (lease {m.lease_left_s:.0f} s left)" if m.live
                     else f"away for {-m.lease_left_s:.0f} s" if m.lease_left_s > -1e9
                     else "stopped")
            line = f"  {m.name}: {state}, {m.slots} slots"
            if m.handing_over:
                line += f" (+{m.handing_over} being handed over)"
            if m.orphaned_domains:
                line += (f"; only its disk holds ~{m.orphaned_urls:,} unfetched URLs of "
                         f"{m.orphaned_domains:,} domains ({m.orphaned_bytes:,} bytes): they "
                         "are crawled when it comes back, or lost with --forget")
            lines.append(line)
        counted = ", ".join(f"{k} {v:,}" for k, v in self.counters.items() if v)
        if counted:
            lines.append(f"  {counted}")
        if self.forgotten:
            lines.append(f"forgot {self.forgotten['machine']}: ~{self.forgotten['urls']:,} "
                         f"unfetched URLs of {self.forgotten['domains']:,} domains lost "
                         f"({self.forgotten['bytes']:,} bytes)")
        if self.missing:
            lines.append(self.missing)
        return "\n".join(lines)


async def machines_report(settings: CrawlerSettings, *, forget: str | None = None,
                          now: float | None = None) -> MachinesReport:
    now = time.time() if now is None else now
    async with open_frontier(settings, create=False) as (frontier, _):
        keys = frontier.state.keys
        counters = await frontier.state.counters()
        per_url = _bytes_per_url(counters)
        view = await machines_view(frontier.redis, keys)
        forgotten: dict[str, int] = {}
        missing = ""
        if forget is not None:
            known = set(view.leases) | set(view.slots) | set(view.orphaned_bytes)
            known = {name.lstrip(">") for name in known}
            if forget not in known:
                missing = f"no machine named {forget!r} in crawl {settings.crawl_name!r}"
            elif view.leases.get(forget, 0.0) > now:
                missing = (f"machine {forget!r} is live (its lease runs): stop it first, or "
                           "wait for its lease to end")
            else:
                domains, lost = await forget_machine(frontier.redis, keys, forget)
                forgotten = {"machine": forget, "domains": domains, "bytes": lost,  # type: ignore[dict-item]
                             "urls": round(lost / per_url) if per_url else 0}
                view = await machines_view(frontier.redis, keys)
                counters = await frontier.state.counters()
    names = sorted({n.lstrip(">") for n in view.slots} | set(view.leases)
                   | {n for n, b in view.orphaned_bytes.items() if b})
    lines = []
    for name in names:
        lease = view.leases.get(name)
        orphaned = view.orphaned_bytes.get(name, 0)
        lines.append(MachineLine(
            name=name, live=lease is not None and lease > now,
            lease_left_s=(lease - now) if lease is not None else -1e18,
            slots=len(view.slots.get(name, [])), handing_over=len(view.slots.get(f">{name}", [])),
            orphaned_domains=view.orphaned_domains.get(name, 0), orphaned_bytes=orphaned,
            orphaned_urls=round(orphaned / per_url) if per_url else 0))
    return MachinesReport(settings.crawl_name, view.slot_count, len(view.free_slots), lines,
                          {k: counters.get(k, 0) for k in _COUNTERS}, forgotten, missing)


def _bytes_per_url(counters: dict[str, int]) -> float:
    """The crawl's average frontier line, newline and batch separators included."""
    urls = counters.get("urls_added", 0)
    return counters.get("bytes_appended", 0) / urls if urls else 0.0
