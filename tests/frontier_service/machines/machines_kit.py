"""Two frontiers on one Redis with their own roots: two machines of one crawl, in-process."""

from __future__ import annotations

from pathlib import Path

from frontier_service.frontier.frontier import Frontier
from frontier_service.frontier.frontier_files import walk
from frontier_service.frontier.machine_state import MachineState
from frontier_service.machines.machine_loop import MachineLoop

SLOTS = 8


async def join(frontier: Frontier, name: str, *, lease_seconds: float = 30.0) -> MachineLoop:
    keys = frontier.state.keys
    state = MachineState(frontier.redis, keys, machine=name, slots=SLOTS,
                         prefixes=[keys.domain_prefix, frontier.config.host_gates])
    frontier.own_slots(state)
    loop = MachineLoop(frontier, frontier.files.root, lease_seconds=lease_seconds, leader=True)
    await loop.start()
    return loop


async def join_two(first: Frontier, second: Frontier) -> tuple[MachineLoop, MachineLoop]:
    """Machines A and B, each with half the slots (A joined first, then gave B its share)."""
    a, b = await join(first, "A"), await join(second, "B")
    await a._balance(await a._beat())
    await b._beat()
    return a, b


def domains_of(loop: MachineLoop, count: int) -> list[str]:
    """`count` domain keys in this machine's slots."""
    out, i = [], 0
    while len(out) < count:
        domain = f"host{i}.test"
        if loop.machine.slot(domain) in loop.machine.mine:
            out.append(domain)
        i += 1
    return out


async def unread_urls(frontier: Frontier) -> list[str]:
    """The URLs between each domain's read offset and the size Redis records, in this
    machine's files, for the domains whose hash measures this machine's file."""
    machine = frontier.machine
    assert machine is not None
    urls = []
    for domain, _path, _size in walk(frontier.files.root):
        assert domain is not None
        m, ro, size = await frontier.redis.hmget(frontier.state.keys.domain(domain),
                                                 ["m", "read_offset", "size"])
        if m is None or m.decode() != machine.machine:
            continue
        pos, end = int(ro or 0), int(size or 0)
        while pos < end:
            records, after = frontier.files.read_from(domain, pos, 1)
            if not records or after > end:
                break
            urls.append(records[0].url)
            pos = after
    return urls


def file_domains(root: Path) -> set[str]:
    return {domain for domain, _path, size in walk(root) if size and domain is not None}
