from __future__ import annotations

from collections.abc import Iterator

import pytest

from archive_testkit.testweb import TestWeb, serve_in_background
from tests.testkit.testweb.web_client import SMALL


@pytest.fixture
def web() -> Iterator[TestWeb]:
    """The SMALL test web, served from a background thread for one test."""
    with serve_in_background(SMALL) as running:
        yield running
