"""The visit buffer's own page counts per domain: bounded, the domains fetched lately kept."""

from __future__ import annotations

from typing import Any, cast

import pytest

from frontier_service.frontier.visited import VisitedRecord
from frontier_service.pages.visit_buffer import VisitBuffer

pytestmark = pytest.mark.unit


def fetched(buffer: VisitBuffer, domain: str) -> None:
    buffer.record(VisitedRecord(f"http://{domain}/", 200, 0), domain, ok=True)


def test_page_counts_keep_the_domains_counted_last() -> None:
    buffer = VisitBuffer(cast(Any, None), known_domains=3)  # record() never touches Redis
    for _ in range(5):
        fetched(buffer, "busy.test")
    for n in range(4):
        fetched(buffer, f"d{n}.test")
        fetched(buffer, "busy.test")  # fetched all along: never the least recent
    assert len(buffer.page_counts) == 3
    assert buffer.known_pages("busy.test", stored=0) == 9
    assert set(buffer.page_counts) == {"d2.test", "d3.test", "busy.test"}
    # A forgotten domain's count comes from Redis (what the claim read), as after a restart.
    assert buffer.known_pages("d0.test", stored=1) == 1
    assert len(buffer.page_counts) == 3 and "d0.test" in buffer.page_counts
