"""The collector's thresholds during an import: the youngest raised, all restored after."""

from __future__ import annotations

import gc

import pytest

from archive_pipelines.warc.collector import YOUNG_THRESHOLD, fewer_collections


def test_the_young_threshold_is_raised_then_restored() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 11, 12)
        with fewer_collections():
            assert gc.get_threshold() == (YOUNG_THRESHOLD, 11, 12)
            with fewer_collections():  # nested (a span read again in the importing process)
                assert gc.get_threshold() == (YOUNG_THRESHOLD, 11, 12)
            assert gc.get_threshold() == (YOUNG_THRESHOLD, 11, 12)
        assert gc.get_threshold() == (700, 11, 12)
        with pytest.raises(RuntimeError), fewer_collections():
            raise RuntimeError("an import that fails")
        assert gc.get_threshold() == (700, 11, 12)
        gc.set_threshold(50_000, 10, 10)  # a process that collects even less often keeps it
        with fewer_collections():
            assert gc.get_threshold() == (50_000, 10, 10)
    finally:
        gc.set_threshold(*before)
