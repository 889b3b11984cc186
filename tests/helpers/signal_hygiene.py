"""Each test leaves SIGTERM as it found it in the test process.

A disposition of SIG_IGN survives exec: once some test left SIGTERM ignored in a pytest worker
(in a full run one did, through code that sets it from C; run alone it does not), every process
that worker started afterwards ignored SIGTERM, so Dagster's compute-log `tail` could not be
stopped (the run failed after 30 s) and `multiprocessing.Pool.terminate` hung. The kernel's
view (`/proc/<pid>/status`, SigIgn), not Python's, says whether SIGTERM is ignored; when a test
changed it, the default is put back and the test named on stderr, so the cause can be found."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Generator

import pytest

_SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def _sigterm_ignored() -> bool:
    with open(f"/proc/{os.getpid()}/task/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) & _SIGTERM_BIT)
    return False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[
        None, object, object]:
    before = _sigterm_ignored()
    try:
        return (yield)
    finally:
        if _sigterm_ignored() and not before:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            print(f"\n{item.nodeid} left SIGTERM ignored in the test process: reset",
                  file=sys.stderr)
