"""Hash-prefix partitions: the 256 two-digit prefixes (`00`..`ff`) and the sha256 range of a
prefix, so a store listing and a catalog query walk the same slice."""

from __future__ import annotations

import re

_HEX_PREFIX = re.compile(r"[0-9a-f]{0,64}")

HEX_PREFIXES: tuple[str, ...] = tuple(f"{i:02x}" for i in range(256))


def prefix_range(prefix: str | None) -> tuple[str, str | None]:
    """The sha256 range [low, high) of a hex prefix (`""`/None: everything; high None: no
    upper bound)."""
    prefix = prefix or ""
    if not _HEX_PREFIX.fullmatch(prefix):
        raise ValueError(f"scrub prefix must be lowercase hex, got {prefix!r}")
    if not prefix:
        return "", None
    following = int(prefix, 16) + 1
    if following >= 16 ** len(prefix):
        return prefix, None
    return prefix, f"{following:0{len(prefix)}x}"
