"""`Counts`: the base of the report dataclasses that domain operations return.

A report's `int` fields are counts, its `Counter` fields counts per key (per store, per
status class), its `list` fields lines of text (errors, warnings). `add` sums two reports of
one kind (a batch into a run's total); `counts` lists the plain counts; each report type's
`as_metadata` says which of its figures a run records, by the names Dagit shows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import fields
from typing import Self

MetadataValue = int | float | str | bool


def dedup_ratio(bytes_in: int, bytes_saved: int) -> float:
    """Logical bytes / stored bytes (1.0 = no dedup)."""
    stored = bytes_in - bytes_saved
    return bytes_in / stored if stored > 0 else 1.0


MAX_LINES = 1_000  # problem lines a report keeps; the rest are counted, not listed


def add_line(lines: list[str], line: str, *, limit: int = MAX_LINES) -> None:
    """Append `line` to a report's lines, up to `limit` of them and one line saying more were
    left out (a run over a million bad records keeps its memory and its output bounded)."""
    if len(lines) < limit:
        lines.append(line)
    elif len(lines) == limit:
        lines.append("… (more: see the counts)")


def _is_count(annotation: object) -> bool:
    return annotation in (int, "int")


class Counts:
    """Mixin for a report dataclass: adding two reports, and its counts as a dict."""

    def counts(self) -> dict[str, int]:
        """Every `int` field by name, in declaration order."""
        return {f.name: getattr(self, f.name) for f in fields(self)  # type: ignore[arg-type]
                if _is_count(f.type)}

    def add_counts(self, other: Self) -> None:
        """Add `other`'s counts and counts per key to this report's (lines untouched)."""
        for f in fields(self):  # type: ignore[arg-type]
            mine = getattr(self, f.name)
            if _is_count(f.type):
                setattr(self, f.name, mine + getattr(other, f.name))
            elif isinstance(mine, Counter):
                mine.update(getattr(other, f.name))

    def add(self, other: Self) -> None:
        """Add `other` to this report: counts summed, lines appended."""
        self.add_counts(other)
        for f in fields(self):  # type: ignore[arg-type]
            mine = getattr(self, f.name)
            if isinstance(mine, list):
                mine.extend(getattr(other, f.name))
