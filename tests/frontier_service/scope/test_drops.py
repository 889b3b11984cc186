"""UrlDrops: every dropped URL counted by reason (metrics, Redis counters, the supervisor's
sum, Prometheus) and logged once per host and reason."""

from __future__ import annotations

import logging
from collections import Counter

import pytest

from archive_pipelines.canonical_urls import MAX_URL_BYTES
from frontier_service.metrics import CrawlMetrics, combine_metrics, render_prometheus
from frontier_service.scope.crawl_scope import DOMAIN_NOT_ALLOWED, TOO_DEEP
from frontier_service.scope.drops import (
    ADDRESS_REFUSED,
    BEYOND_MAX_DEPTH,
    INVALID,
    OUT_OF_SCOPE,
    TOO_LONG,
    UrlDrops,
    dropped_counters,
    invalid_reason,
    scope_reason,
)

pytestmark = pytest.mark.unit

LONG = "http://a.test/?q=" + "x" * MAX_URL_BYTES


def test_each_drop_is_counted_and_each_host_and_reason_logged_once(
        caplog: pytest.LogCaptureFixture) -> None:
    metrics, persisted = CrawlMetrics(), Counter[str]()
    drops = UrlDrops(metrics, persist=lambda name, n: persisted.update({name: n}))
    with caplog.at_level(logging.INFO, logger="frontier_service.scope.drops"):
        for _ in range(3):
            drops.drop(TOO_LONG, "a.test", LONG)
        drops.drop(TOO_LONG, "b.test", LONG)
        drops.drop(BEYOND_MAX_DEPTH, "a.test", "http://a.test/deep", count=40)
        drops.drop(BEYOND_MAX_DEPTH, "a.test", "http://a.test/deep", count=0)
    assert metrics.urls_dropped == {TOO_LONG: 4, BEYOND_MAX_DEPTH: 40}
    assert persisted == {"urls_dropped:too_long": 4, "urls_dropped:beyond_max_depth": 40}
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert sum("a.test: URLs longer than 8,192 bytes" in line for line in lines) == 1
    assert all(len(line) < 400 for line in lines)  # the URL is shortened, its size given
    assert dropped_counters({**persisted, "claims": 3}) == {TOO_LONG: 4, BEYOND_MAX_DEPTH: 40}


@pytest.mark.parametrize(("url", "reason"), [
    (LONG, TOO_LONG),
    ("http://a.test/" + "<" * (MAX_URL_BYTES // 2), TOO_LONG),  # too long once canonical
    ("mailto:x@a.test", INVALID),
    ("http://", INVALID),
])
def test_invalid_urls_are_told_apart_from_too_long_ones(url: str, reason: str) -> None:
    assert invalid_reason(url) == reason


def test_scope_refusals_map_to_reasons() -> None:
    assert scope_reason(TOO_DEEP) == BEYOND_MAX_DEPTH
    assert scope_reason(DOMAIN_NOT_ALLOWED) == OUT_OF_SCOPE
    assert scope_reason("10.0.0.1 is private; list a network ...") == ADDRESS_REFUSED


def test_processes_drops_add_up_and_are_exposed_by_reason() -> None:
    one, two = CrawlMetrics(), CrawlMetrics()
    one.urls_dropped = {TOO_LONG: 2, INVALID: 1}
    two.urls_dropped = {TOO_LONG: 3, BEYOND_MAX_DEPTH: 7}
    total = combine_metrics([one, two])
    assert total.urls_dropped == {TOO_LONG: 5, INVALID: 1, BEYOND_MAX_DEPTH: 7}
    assert one.urls_dropped == {TOO_LONG: 2, INVALID: 1}  # the parts are left as they were
    text = render_prometheus(total)
    assert 'frontier_urls_dropped_total{reason="too_long"} 5' in text
    assert 'frontier_urls_dropped_total{reason="beyond_max_depth"} 7' in text
