"""The seen filter cannot grow: a crawl says so as it fills, once at each of 80%, 100%, 150%
and 200% of its capacity, with the false-positive rate it has then."""

from __future__ import annotations

import pytest

from frontier_service.frontier.seen import plan_layout
from frontier_service.frontier.seen_capacity import SeenCapacityWatch, SeenFill

pytestmark = pytest.mark.unit  # pure: no server, no process


def _watch(capacity: int, error_rate: float = 0.001) -> SeenCapacityWatch:
    layout = plan_layout(capacity, error_rate)
    return SeenCapacityWatch(capacity=capacity, bits=layout.bits, hashes=layout.hashes,
                             segment_bits=layout.segment_bytes * 8)


def test_a_filling_filter_warns_once_at_each_threshold() -> None:
    watch = _watch(1_000_000)
    said = {added: watch.check(added) for added in range(0, 2_600_001, 50_000)}
    warned = [added for added, text in said.items() if text]
    assert warned == [800_000, 1_000_000, 1_500_000, 2_000_000]
    first = said[800_000]
    assert first is not None and first.startswith(
        "seen filter: 800,000 URLs added, 80% of its capacity 1,000,000")
    assert "never fetched" in first and "seen_capacity" in first and "--seen-capacity" in first
    assert watch.check(2_000_000) is None  # said already


def test_a_jump_past_several_thresholds_warns_once() -> None:
    watch = _watch(10_000)
    assert watch.check(7_000) is None
    assert watch.check(16_000) is not None  # 80%, 100% and 150% at once: one line
    assert watch.check(17_000) is None
    assert watch.check(20_000) is not None


@pytest.mark.parametrize("error_rate", [0.001, 0.01])
def test_the_false_positive_rate_is_the_configured_one_at_capacity(error_rate: float) -> None:
    capacity = 20_000_000
    layout = plan_layout(capacity, error_rate)
    fill = SeenFill(added=capacity, capacity=capacity, bits=layout.bits, hashes=layout.hashes,
                    segment_bits=layout.segment_bytes * 8)
    assert fill.false_positive_rate() == pytest.approx(error_rate, rel=0.1)
    # ... and it climbs past it: at twice the capacity, ten times as many drops or more.
    assert fill.false_positive_rate(2 * capacity) > 10 * error_rate
    assert fill.false_positive_rate(0) == 0.0
    classic = SeenFill(added=capacity, capacity=capacity, bits=layout.bits, hashes=layout.hashes)
    assert classic.false_positive_rate() < fill.false_positive_rate()  # blocking costs a little
