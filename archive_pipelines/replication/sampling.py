"""Random samples of a store's copies as slices of the hash space.

A blob's sha256 says nothing about when or how it was stored, so the copies whose hashes
fall in a random slice of the hash space are a random sample of the store's copies. A
sample is cut into many small windows, one at a random place in each equal part of the
range (every copy has the same chance of being read, and the windows spread over the whole
store); each window is one index range of the catalog, read in hash order.
"""

from __future__ import annotations

import random

from archive_pipelines.blobstore.hash_prefixes import prefix_range

Window = tuple[str, str | None]  # sha256 range [low, high); high None: no upper bound

_DIGITS = 64
_SPACE = 16 ** _DIGITS  # every sha256, as an integer, is below this
DEFAULT_STRATA = 64


def sample_fraction(copies: int, *, fraction: float | None, minimum: int = 0) -> float:
    """The share of `copies` to read: `fraction` (None: all), raised to at least `minimum`
    copies (capped at all of them)."""
    if fraction is None or fraction >= 1 or copies <= 0:
        return 1.0
    if fraction <= 0:
        raise ValueError(f"a sample must be a fraction in (0, 1], got {fraction}")
    return min(1.0, max(fraction, minimum / copies))


def sample_windows(prefix: str | None, fraction: float, *, rng: random.Random,
                   strata: int = DEFAULT_STRATA) -> list[Window]:
    """Windows covering `fraction` of the hash range of `prefix`, in random order.

    The range is split into `strata` equal parts; each holds one window of `fraction` of
    its width at a random offset. A fraction of 1 is the whole range as one window.
    """
    low, high = prefix_range(prefix)
    if fraction >= 1:
        return [(low, high)]
    if fraction <= 0 or strata < 1:
        raise ValueError("the fraction must be in (0, 1] and strata >= 1")
    start = _as_int(low)
    end = _SPACE if high is None else _as_int(high)
    part = (end - start) // strata
    if part == 0:  # a range too narrow to cut (a prefix naming almost the whole hash)
        return [(low, high)]
    width = max(1, int(part * fraction))
    windows: list[Window] = []
    for i in range(strata):
        base = start + i * part
        offset = base + rng.randrange(max(1, part - width + 1))
        following = offset + width
        windows.append((_as_hex(offset), None if following >= _SPACE else _as_hex(following)))
    rng.shuffle(windows)  # a run cut short by a limit still reads from the whole range
    return windows


def _as_int(bound: str) -> int:
    return int(bound.ljust(_DIGITS, "0"), 16) if bound else 0


def _as_hex(value: int) -> str:
    return f"{value:0{_DIGITS}x}"
