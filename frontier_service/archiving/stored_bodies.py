"""The bodies this crawler's object store acknowledged lately: a repeat costs no request.

A crawl sees the same body many times (a site's shared scripts, styles and images; 18-30%
of body references in our benches). On a local store a repeat costs one stat; on S3 each
would cost a conditional PUT (refused with 412, billed as a PUT). A body the store
acknowledged in this process is as present as a 412 would say: gc removes only blobs
unreferenced for longer than its grace, and keeps the bodies named by segments not yet
ingested. Bounded: the oldest hashes are forgotten first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

DEFAULT_LIMIT = 200_000  # ~25 MB of hashes at most


class StoredBodies:
    """A thread-safe, bounded set of sha256 hex digests (least recently seen dropped)."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError(f"limit must be positive, got {limit}")
        self._limit = limit
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, sha256: object) -> bool:
        with self._lock:
            if sha256 not in self._seen:
                return False
            self._seen.move_to_end(sha256)  # type: ignore[arg-type]
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._seen)

    def add(self, sha256: str) -> None:
        with self._lock:
            self._seen[sha256] = None
            self._seen.move_to_end(sha256)
            while len(self._seen) > self._limit:
                self._seen.popitem(last=False)
