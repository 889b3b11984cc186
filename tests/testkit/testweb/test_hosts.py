"""Which hosts are dead, odd or special: stable, and in the configured proportions."""

from __future__ import annotations

from collections import Counter

import pytest

from archive_testkit.testweb import (
    DeadMode,
    RobotsKind,
    TestWebConfig,
    all_hosts,
    host_traits,
    hosts_where,
)

DEFAULT = TestWebConfig()


@pytest.mark.unit
def test_default_proportions_of_host_traits() -> None:
    traits = [host_traits(DEFAULT, host) for host in all_hosts(DEFAULT)]
    assert all(t is not None for t in traits)
    robots = Counter(t.robots for t in traits if t is not None)
    dead = Counter(t.dead for t in traits if t is not None)
    assert robots[RobotsKind.HUGE] == 1
    assert 1 <= robots[RobotsKind.GARBAGE] <= 30
    assert 40 <= robots[RobotsKind.CRAWL_DELAY] <= 150
    assert 100 <= robots[RobotsKind.NONE] <= 350
    assert 5 <= dead[DeadMode.CLOSE] + dead[DeadMode.UNAVAILABLE] <= 40
    assert dead[DeadMode.CLOSE] and dead[DeadMode.UNAVAILABLE]
    assert 120 <= len(hosts_where(DEFAULT, lambda t: t.special)) <= 280
    assert 5 <= len(hosts_where(DEFAULT, lambda t: t.traps)) <= 40


@pytest.mark.unit
def test_host_zero_is_always_a_plain_live_host() -> None:
    for seed in range(20):
        config = TestWebConfig(seed=seed, dead_fraction=0.9, robots_fraction=0.0)
        traits = host_traits(config, "site0000.test")
        assert traits is not None
        assert (traits.dead, traits.robots) == (DeadMode.ALIVE, RobotsKind.STANDARD)


@pytest.mark.unit
def test_traits_do_not_move_when_unrelated_settings_change() -> None:
    slower = TestWebConfig(latency_ms=50, pages_per_host=10, links_per_page=5)
    assert [host_traits(slower, h) for h in all_hosts(slower)[:200]] == [
        host_traits(DEFAULT, h) for h in all_hosts(DEFAULT)[:200]
    ]


@pytest.mark.unit
def test_unknown_hosts_have_no_traits() -> None:
    assert host_traits(DEFAULT, "example.com") is None
    assert host_traits(DEFAULT, "site2000.test") is None  # one past the last host
    assert host_traits(DEFAULT, "Site1999.TEST.:80") is not None
