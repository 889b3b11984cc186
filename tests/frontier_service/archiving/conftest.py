from __future__ import annotations

from collections.abc import Iterator

import pytest

from archive_testkit.testweb import TestWeb, serve_in_background
from tests.frontier_service.fetch.web import WEB


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    """The test web, served from a background thread for one test module."""
    with serve_in_background(WEB) as running:
        yield running
