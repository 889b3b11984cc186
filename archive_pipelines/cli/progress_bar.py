"""Progress bars on stderr (quiet when not a terminal unless forced)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm


@contextmanager
def progress_bar(desc: str, unit: str, total: int | None = None,
                 *, disable: bool = False) -> Iterator[tqdm]:
    """A bar on stderr; shown only on a terminal, never with `disable`."""
    bar = tqdm(desc=desc, unit=unit, total=total, file=sys.stderr, dynamic_ncols=True,
               disable=True if disable else None, mininterval=0.5)
    try:
        yield bar
    finally:
        bar.close()

