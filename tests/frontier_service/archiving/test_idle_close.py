"""IdleClose: a quiet crawl closes its segment soon; a trickle backs off to the age rule."""

from __future__ import annotations

import pytest

from frontier_service.archiving.idle_close import CloseKind, IdleClose

pytestmark = pytest.mark.unit  # pure: no server, no process


def _segments_per_hour(*, page_every_s: float, idle_s: float = 30.0, cap_s: float = 300.0) -> int:
    """Segments a crawl archiving one page every `page_every_s` writes in an hour (size
    never reached), by the idle rule and the age rule together."""
    policy = IdleClose(idle_s, cap_s, now=0.0)
    opened, pending, closes, now = 0.0, 0, 0, 0.0
    next_page = page_every_s
    while now < 3600:
        now += 0.5
        if now >= next_page:
            policy.saw_pages(now)
            pending += 1
            next_page += page_every_s
        kind = None
        if pending and now - opened >= cap_s:
            kind = CloseKind.AGE
        elif pending and policy.due(now):
            kind = CloseKind.IDLE
        if kind is not None:
            policy.closed(kind)
            closes, pending, opened = closes + 1, 0, now
    return closes


def test_a_quiet_crawl_closes_after_the_idle_wait() -> None:
    policy = IdleClose(30.0, 300.0, now=0.0)
    policy.saw_pages(5.0)
    assert not policy.due(34.0) and policy.due(35.0)


def test_idle_closes_in_a_row_back_off_to_the_age_limit_and_a_size_close_resets() -> None:
    policy = IdleClose(30.0, 300.0, now=0.0)
    waits = []
    for _ in range(6):
        waits.append(policy.wait_s)
        policy.closed(CloseKind.IDLE)
    assert waits == [30.0, 60.0, 120.0, 240.0, 300.0, 300.0]
    policy.closed(CloseKind.AGE)
    assert policy.wait_s == 300.0
    policy.closed(CloseKind.SIZE)
    assert policy.wait_s == 30.0


def test_new_work_after_a_long_pause_closes_soon_again() -> None:
    policy = IdleClose(30.0, 300.0, now=0.0)
    for _ in range(3):
        policy.closed(CloseKind.IDLE)
    policy.saw_pages(100.0)
    assert policy.wait_s == 240.0  # a trickle: still backed off
    policy.saw_pages(100.0 + 300.0)  # quiet for a whole segment_seconds: new work
    assert policy.wait_s == 30.0 and policy.due(430.0)


def test_zero_disables_idle_closes() -> None:
    assert not IdleClose(0.0, 300.0, now=0.0).due(10_000.0)


def test_a_trickle_costs_about_what_the_age_rule_costs() -> None:
    """A page every 31 s (just over the idle wait) writes ~the age rule's 12 segments an
    hour plus the back-off's few, not one per page (116)."""
    trickle = _segments_per_hour(page_every_s=31.0)
    assert trickle <= 12 + 5, trickle
    assert _segments_per_hour(page_every_s=31.0, idle_s=0.0) == 12  # the age rule alone
