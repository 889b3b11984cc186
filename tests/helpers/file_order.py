"""The order test files are handed to pytest-xdist's workers: the longest first.

`make test` runs two workers with `--dist loadfile`: each worker takes one file at a time from
a queue. xdist's own queue order (the files with the most tests first) put the single long
crash tests last, where one ran alone for minutes while the other worker sat idle. Here the
files are queued by their measured wall seconds (tests/file_seconds.json), longest first:
longest-processing-time-first scheduling, so the short files fill the end. A file missing
from the table counts as DEFAULT_S. Tests within a file keep their order. The Makefile passes
`--no-loadscope-reorder` so xdist keeps this order.

Refresh the table from a run with the CPU report:
    .venv/bin/pytest -n 2 --dist loadfile --no-loadscope-reorder --cpu-report=/tmp/cpu.json
    .venv/bin/python scripts/test_file_seconds.py /tmp/cpu.json > tests/file_seconds.json
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TABLE = Path(__file__).resolve().parents[1] / "file_seconds.json"
DEFAULT_S = 5.0


def load_seconds(path: Path = TABLE) -> dict[str, float]:
    """File path (as in a node id) -> its wall seconds; empty when the table is missing."""
    try:
        return {str(name): float(seconds) for name, seconds in json.loads(path.read_text()).items()}
    except FileNotFoundError:
        return {}


def longest_first(items: list[pytest.Item], seconds: dict[str, float]) -> list[pytest.Item]:
    """`items` grouped by file, the files by descending seconds; a stable sort, so the order
    within a file (and among files of equal seconds) stays pytest's."""
    return sorted(items, key=lambda item: -seconds.get(item.nodeid.split("::", 1)[0], DEFAULT_S))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items[:] = longest_first(items, load_seconds())
