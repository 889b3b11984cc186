"""StopReport: "frontier exhausted" only when nothing is left queued; otherwise what the
stopped hosts left, grouped by why they stopped."""

from __future__ import annotations

import pytest

from frontier_service.frontier.leftovers import Leftover
from frontier_service.service.stop_report import (
    EXHAUSTED,
    NOTHING_LEFT_TO_FETCH,
    StopReport,
    group_leftovers,
    host_reason_at_stop,
)

pytestmark = pytest.mark.unit

LEFT = [Leftover("a.test", "page budget reached", 900, 30),
        Leftover("b.test", "page budget reached", 300, 10),
        Leftover("dead.test", "host unreachable", 50, 2),
        Leftover("busy.test", "", 4_000, 100)]


def _report(run_reason: str, leftovers: list[Leftover]) -> StopReport:
    return StopReport(run_reason,
                      group_leftovers(leftovers, active=host_reason_at_stop(run_reason)))


def test_exhausted_only_when_nothing_is_left() -> None:
    assert _report(NOTHING_LEFT_TO_FETCH, []).summary == EXHAUSTED
    report = _report(NOTHING_LEFT_TO_FETCH, LEFT[:3])
    assert report.urls_left == 42
    assert report.summary == (
        "nothing left to fetch; 42 URLs left queued on stopped hosts: page budget reached "
        "(2 hosts, 40 URLs), host unreachable (1 host, 2 URLs)")
    assert report.hosts_json()["page budget reached"] == {
        "hosts": 2, "urls_left": 40, "bytes_left": 1_200, "examples": ["a.test", "b.test"]}


@pytest.mark.parametrize(("run_reason", "label"), [
    ("max seconds (30) reached", "time limit"),
    ("max pages (500) reached", "page limit of the run"),
    ("SIGTERM", "not done when the run stopped"),
])
def test_a_limit_or_a_signal_is_named_and_its_hosts_counted(run_reason: str, label: str) -> None:
    report = _report(run_reason, LEFT)
    assert report.summary == run_reason
    assert report.hosts_json()[label]["urls_left"] == 100
    assert [group.reason for group in report.stopped_hosts] == [
        label, "page budget reached", "host unreachable"]  # the most URLs first
