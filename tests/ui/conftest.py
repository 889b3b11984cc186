"""Dagit in a real browser: demo data, Dagit on it, headless Chromium driven by Playwright.

Debian's `chromium` is the browser (Playwright's own download is not used): `make test`
installs it (scripts/ensure-system-deps.sh); when it is missing the tests fail saying so.
Screenshots go to a temp dir; `make screenshots` sets UI_SCREENSHOTS_DIR=docs/img to refresh
the README's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from archive_testkit.dagit import Dagit, tune_test_instance
from tests.helpers.chromium import headless_chromium
from tests.ui.dagit_pages import UI_TIMEOUT_MS, Screenshots
from tests.ui.demo_data import DemoData, build_demo_data, clean_environ

SCREENSHOTS_ENV = "UI_SCREENSHOTS_DIR"
VIEWPORT = {"width": 1400, "height": 900}

# Assertions on the page wait as long as a page may take to render on a busy machine.
expect.set_options(timeout=UI_TIMEOUT_MS)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoData:
    return build_demo_data(tmp_path_factory.mktemp("ui") / "data")


@pytest.fixture(scope="module")
def dagit(demo: DemoData) -> Iterator[Dagit]:
    """Dagit on the demo data with every sensor and schedule stopped until a test starts one."""
    tune_test_instance(demo.dagster_home)
    server = Dagit(data_dir=demo.data_dir, dagster_home=demo.dagster_home,
                   log_path=demo.data_dir / "logs" / "dagit.log", environ=clean_environ())
    server.start(automation=False)
    try:
        server.graphql("mutation { setNuxSeen }")  # no newsletter pop-up over the pages
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with headless_chromium("the Dagit UI tests") as chromium:
        yield chromium


@pytest.fixture
def page(browser: Browser, dagit: Dagit) -> Iterator[Page]:
    context = browser.new_context(base_url=dagit.url, viewport=VIEWPORT)  # type: ignore[arg-type]
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Screenshots:
    docs = os.environ.get(SCREENSHOTS_ENV)
    return Screenshots(tmp_path_factory.mktemp("screenshots"), Path(docs) if docs else None)
