from __future__ import annotations

from collections.abc import Iterator

import pytest

from archive_testkit.testweb import TestWeb, serve_in_background
from tests.frontier_service.fetch.web import WEB


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    """The test web, served from a background thread for one test module.

    Its request log is emptied before each test, so a test sees only its own requests.
    """
    with serve_in_background(WEB) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh_log(request: pytest.FixtureRequest) -> None:
    if "web" in request.fixturenames:
        request.getfixturevalue("web").log.clear()
