"""The garbage collector during an import: young objects collected less often.

An import makes a few objects per record (its header strings, rows, the items a worker
sends), most of them kept until their batch commits. At the collector's default threshold
(a collection every 700 allocations) they are traversed again and again on their way to the
oldest generation, whose full collections then walk everything the process holds: a tenth
of an import's CPU, for almost no garbage (the records make no cycles). The threshold is
raised for the import and restored after it, as the crawler does for its pages.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 10_000  # allocations between collections of the youngest generation


@contextmanager
def fewer_collections() -> Iterator[None]:
    """The youngest generation collected every `YOUNG_THRESHOLD` allocations (at least)
    inside the block; the thresholds as they were after it."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], YOUNG_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
