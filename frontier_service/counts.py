"""Counts: the one shape of the crawler's reports (a run, a Redis rebuild, an audit).

A report is a dataclass of counts (and how long its operation took, `seconds`);
`as_metadata()` is its JSON form, the one `--json` prints and logs read.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass
class Counts:
    """A report's counts; a report with nested parts overrides `as_metadata`."""

    def as_metadata(self) -> dict[str, Any]:
        """Every field by name, floats (durations) rounded to milliseconds."""
        return {f.name: _rounded(getattr(self, f.name)) for f in fields(self)}


def _rounded(value: Any) -> Any:
    return round(value, 3) if isinstance(value, float) else value
