"""Fixtures for the crawler tests: a unique key prefix per test on the session redis-server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis


@pytest.fixture
def crawl_name(redis_url: str) -> Iterator[str]:
    """A fresh crawl name (Redis key prefix); its keys are deleted after the test."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    yield name
    client = redis.Redis.from_url(redis_url)
    try:
        for key in client.scan_iter(match=f"{name}:*", count=1000):
            client.unlink(key)
    finally:
        client.close()
