"""A metrics dataclass in the Prometheus text format (0.0.4): the replay server's and the
crawler's `/metrics`, named alike."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any


def field_samples(metrics: Any, prefix: str, *, gauges: Collection[str],
                  help_texts: Mapping[str, str], skip: Collection[str] = ()) -> list[str]:
    """The lines of each field of the dataclass `metrics` (but `skip`): a counter
    `{prefix}_{name}_total`, or a gauge `{prefix}_{name}` when in `gauges`; HELP when given."""
    lines: list[str] = []
    for item in dataclasses.fields(metrics):
        if item.name in skip:
            continue
        gauge = item.name in gauges
        name = f"{prefix}_{item.name}" if gauge else f"{prefix}_{item.name}_total"
        if item.name in help_texts:
            lines.append(f"# HELP {name} {help_texts[item.name]}")
        lines.append(f"# TYPE {name} {'gauge' if gauge else 'counter'}")
        lines.append(f"{name} {int(getattr(metrics, item.name))}")
    return lines


def uptime_samples(prefix: str, seconds: float) -> list[str]:
    """The gauge `{prefix}_uptime_seconds`."""
    return [f"# TYPE {prefix}_uptime_seconds gauge", f"{prefix}_uptime_seconds {seconds:.3f}"]
