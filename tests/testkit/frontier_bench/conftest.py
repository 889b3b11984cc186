"""The frontier bench tests' fixtures: a fresh crawl name on the session redis-server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.helpers.crawls import delete_keys


@pytest.fixture
def crawl_name(redis_url: str) -> Iterator[str]:
    """A fresh crawl name (Redis key prefix); its keys are deleted after the test."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    yield name
    delete_keys(redis_url, name)
