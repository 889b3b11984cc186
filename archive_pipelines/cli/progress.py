"""Progress bars on stderr (quiet when not a terminal unless forced) and summaries."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm


@contextmanager
def progress_bar(desc: str, unit: str, total: int | None = None,
                 disable: bool = False) -> Iterator[tqdm]:
    """A bar on stderr; shown only on a terminal, never with `disable`."""
    bar = tqdm(desc=desc, unit=unit, total=total, file=sys.stderr, dynamic_ncols=True,
               disable=True if disable else None, mininterval=0.5)
    try:
        yield bar
    finally:
        bar.close()


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"
