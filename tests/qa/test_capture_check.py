"""Capture QA end to end: the test kit's JavaScript site crawled with `--browser always` (real
Redis, real Chromium), ingested, and its captures checked against a replay server started for
the check. Good captures of script-built pages (script-loaded and lazy images included) score
high; a capture whose fetched JSON the store has lost scores low, naming what is missing; no
replayed page, the escape page included, sends a request beyond the replay server."""

from __future__ import annotations

from pathlib import Path

import pytest

from archive_pipelines.blobstore import open_store
from archive_pipelines.catalog import Catalog
from archive_pipelines.qa.sampling import check_with_settings
from archive_pipelines.settings import Settings
from archive_testkit.testweb.js_pages import (
    BROWSER_RESOURCES,
    ESCAPE,
    FETCHED,
    FETCHED_IMAGES,
    FETCHED_JSON,
    LAZY,
    NOSCRIPT,
    PLAIN,
)
from tests.qa.qa_crawls import browser_page, page_url

THRESHOLD = Settings(data_dir=Path("/")).qa.threshold  # the default, 0.9
GOOD = (FETCHED, LAZY, NOSCRIPT, PLAIN)


def _check(data_dir: Path, paths: tuple[str, ...]) -> dict[str, object]:
    settings = Settings(data_dir=data_dir)
    catalog = Catalog.open(settings.catalog_url)
    try:
        pages = {path: browser_page(catalog, path) for path in paths}
        checked = check_with_settings([page.id for page in pages.values()], catalog=catalog,
                                      store=open_store(settings.primary_store, data_dir),
                                      settings=settings)
        by_id = {c.page.id: c for c in checked}
        recorded = catalog.qa.latest(by_id)
        assert {i: r.check for i, r in recorded.items()} == {i: c.check for i, c in by_id.items()}
        return {path: by_id[page.id].check for path, page in pages.items()}
    finally:
        catalog.close()


def test_good_captures_of_script_built_pages_score_high(qa_data: Path) -> None:
    checks = _check(qa_data, GOOD)
    for path, check in checks.items():
        expected = 1 + len(BROWSER_RESOURCES[path])  # the page and every resource it loaded
        assert check.resources_expected == expected, (path, check)
        assert check.resources_replayed == expected and check.missing == (), (path, check)
        assert check.pixel_score is not None and check.pixel_score >= 0.98, (path, check)
        assert check.leaks == 0 and check.error is None, (path, check)
        assert check.score >= THRESHOLD, (path, check)


def test_a_capture_whose_fetched_json_the_store_lost_scores_low(qa_data: Path) -> None:
    """Built honestly: the crawl captured the JSON and its images; then the store lost the
    JSON's body (its blob file deleted from this test's copy of the data dir). The replay
    answers the JSON with 404, its script inserts nothing, the images are never asked for."""
    broken = qa_data
    settings = Settings(data_dir=broken)
    catalog = Catalog.open(settings.catalog_url)
    try:
        with catalog.reading() as tx:
            json_capture = next(c for c in tx.captures.captures_by_url(
                _url_hash(page_url(FETCHED_JSON))) if c.kind == "request")
    finally:
        catalog.close()
    assert json_capture.body_sha256 is not None
    assert open_store(settings.primary_store, broken).delete(json_capture.body_sha256)

    check = _check(broken, (FETCHED,))[FETCHED]
    lost = {page_url(FETCHED_JSON), *(page_url(image) for image in FETCHED_IMAGES)}
    assert set(check.missing) == lost
    assert (check.resources_replayed, check.resources_expected) == (1, 1 + len(lost))
    assert check.pixel_score is not None and check.pixel_score < 1.0  # the items are not drawn
    assert check.score < THRESHOLD
    assert check.score == pytest.approx(1 / (1 + len(lost)))


def test_replayed_pages_send_nothing_beyond_the_replay_server(qa_data: Path) -> None:
    """The escape page tries 169.254.169.254, 10.0.0.1 and a loopback port by script, iframe,
    fetch(), redirect and WebSocket; its replay, like every other, stays on the replay server
    (any other request would be refused and counted: test_replay_view.py shows it is)."""
    checks = _check(qa_data, (ESCAPE, FETCHED))
    assert {path: check.leaks for path, check in checks.items()} == {ESCAPE: 0, FETCHED: 0}
    assert checks[ESCAPE].error is None and checks[ESCAPE].pixel_score is not None


def _url_hash(url: str) -> str:
    import hashlib

    from archive_pipelines.canonical_urls import canonicalize

    return hashlib.sha256(canonicalize(url).encode()).hexdigest()
