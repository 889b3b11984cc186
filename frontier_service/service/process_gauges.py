"""This process's open descriptors and resident memory, read from /proc (0 elsewhere)."""

from __future__ import annotations

import os

from frontier_service.metrics import CrawlMetrics

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def open_fds(pid: int | str = "self") -> int:
    """Descriptors open in process `pid` now; 0 if /proc cannot tell."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def rss_bytes(pid: int | str = "self") -> int:
    """Resident set size of process `pid` in bytes; 0 if /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_BYTES
    except (OSError, IndexError, ValueError):
        return 0


def sample_process(metrics: CrawlMetrics) -> None:
    """Set the process gauges (open_fds, rss_bytes) of `metrics` to their values now."""
    metrics.open_fds = open_fds()
    metrics.rss_bytes = rss_bytes()
