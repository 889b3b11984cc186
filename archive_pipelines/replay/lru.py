"""A least-recently-used cache bounded by the total size of what it holds (seed 003's
memory cache): hot bodies and capture headers are served without touching the store."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class SizedLru(Generic[K, V]):
    """Up to `capacity` units (bytes, or entries with `size_of=lambda v: 1`); a value larger
    than `max_item` is never kept. Thread-safe: replay reads in worker threads."""

    def __init__(self, capacity: int, *, size_of: Callable[[V], int],
                 max_item: int | None = None) -> None:
        self.capacity = capacity
        self.max_item = capacity if max_item is None else min(max_item, capacity)
        self._size_of = size_of
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.size = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: K, value: V) -> bool:
        """Keep `value` (evicting the least recently used); False when it is too large."""
        size = self._size_of(value)
        if size > self.max_item:
            return False
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.size -= old[1]
            self._items[key] = (value, size)
            self.size += size
            while self.size > self.capacity:
                _key, (_value, evicted) = self._items.popitem(last=False)
                self.size -= evicted
        return True
