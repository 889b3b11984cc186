"""Each test leaves no Dagster instance entered in the test process.

Entering a `DagsterInstance` sets a context variable, the current defs-state storage, that only
its exit resets. A context built without `with` (`dg.build_schedule_context(...)` whose
resources Dagster builds on an ephemeral instance of its own) enters one and never leaves it;
when the garbage collector later closes that context, its exit puts back the storage of
whichever instance was current when it was entered, long disposed, in the middle of some other
test; the next `Definitions.get_repository_def()` in that pytest worker (a unit test, run after
it only in a full run) failed with "Attempted to resolve undefined DagsterInstance weakref".
Such contexts are entered with `with` in the tests. When a storage is still set after a test
(left by it, or put back during it by a context collected then), it is reset and the test
named on stderr, so the cause can be found."""

from __future__ import annotations

import sys
from collections.abc import Generator

import pytest
from dagster._core.storage.defs_state.base import DefsStateStorage, _current_storage


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[
        None, object, object]:
    try:
        return (yield)
    finally:
        if DefsStateStorage.get() is not None:
            _current_storage.set(None)
            print(f"\n{item.nodeid} ended with a Dagster instance's defs-state storage set in "
                  "the test process (left entered by it, or by a context collected during it): "
                  "reset", file=sys.stderr)
