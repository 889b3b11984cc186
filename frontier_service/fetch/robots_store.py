"""Where fetched robots.txt files are kept between processes: a small async Protocol.

The frontier keeps them in Redis (one hash per origin, expiring at `expires_at`); the
in-memory store here serves single-process runs and tests.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple, Protocol


class StoredRobots(NamedTuple):
    """One origin's robots.txt as fetched: the (capped) body and when to fetch it again.

    `source` is a RobotsSource value ("parsed", "garbage", "missing", "unreachable"): a 4xx
    and a 5xx both leave an empty body but mean opposite things.
    """

    body: bytes
    expires_at: float  # wall-clock epoch seconds
    source: str
    truncated: bool = False


class RobotsStore(Protocol):
    """Async key-value storage of robots.txt entries keyed by origin (`scheme://host[:port]`)."""

    async def get(self, origin: str) -> StoredRobots | None:
        """The stored entry, expired or not (the cache decides), or None."""
        ...

    async def set(self, origin: str, entry: StoredRobots) -> None:
        """Store (replace) the entry for `origin`."""
        ...


class InMemoryRobotsStore:
    """A RobotsStore in a dict, least recently used entries dropped beyond `max_entries`."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[str, StoredRobots] = OrderedDict()

    async def get(self, origin: str) -> StoredRobots | None:
        entry = self._entries.get(origin)
        if entry is not None:
            self._entries.move_to_end(origin)
        return entry

    async def set(self, origin: str, entry: StoredRobots) -> None:
        self._entries[origin] = entry
        self._entries.move_to_end(origin)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
