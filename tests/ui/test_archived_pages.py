"""Archived pages opened from the views with `file://` in headless Chromium render as pages.

Chromium takes a file's type from its path with symlinks resolved: the alias a view's link
points at must carry the link's extension (`views.paths.alias_extension`). A link made the
earlier way, to the plain alias, shows the page's source: the contrast this test checks too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.storage.file_ingest import ingest_directory
from archive_pipelines.storage.verify import verify_storage
from archive_pipelines.views.paths import alias_extension
from tests.helpers.storage import add_snapshot, write_tree

pytestmark = [pytest.mark.ui, pytest.mark.timeout(300)]

TITLE = "An archived page"
PAGE = (b"<!doctype html><html><head><title>" + TITLE.encode() + b"</title>"
        b'<link rel="stylesheet" href="static/site.css"></head>'
        b'<body><h1 id="headline">Hello from the archive</h1></body></html>')
FILES = {"index.html": PAGE, "static/site.css": b"h1 { color: rgb(200, 0, 0); }"}
SNAPSHOT = "by_timestamp/1735142400.1/wget"


@pytest.fixture
def archived(sqlite_storage: StorageParts, tmp_path: Path) -> StorageParts:
    sid = add_snapshot(sqlite_storage)
    ingest_directory(sqlite_storage.catalog, sqlite_storage.primary, sqlite_storage.views,
                     work=sqlite_storage.work, snapshot_id=sid, extractor="wget",
                     directory=write_tree(tmp_path / "site", FILES))
    return sqlite_storage


@pytest.fixture
def tab(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    try:
        yield context.new_page()
    finally:
        context.close()


def test_a_views_index_html_opens_as_a_page(archived: StorageParts, tab: Page) -> None:
    archive = archived.views.farm.archive_root
    link = archive / SNAPSHOT / "index.html"
    assert link.is_symlink() and os.path.realpath(link).endswith(".html")
    tab.goto(link.as_uri())
    expect(tab).to_have_title(TITLE)
    headline = tab.locator("#headline")
    expect(headline).to_have_text("Hello from the archive")
    # The stylesheet, linked relatively, loads through its own `.css` alias.
    expect(headline).to_have_css("color", "rgb(200, 0, 0)")
    # The same page through another view's folder link.
    by_domain = next((archive / "by_domain" / "example.com").glob("*/*/wget/index.html"))
    tab.goto(by_domain.as_uri())
    expect(tab).to_have_title(TITLE)


def test_a_link_to_the_plain_alias_shows_the_source_until_it_is_upgraded(
        archived: StorageParts, tab: Page) -> None:
    """How links of earlier versions opened, and `verify --fix` upgrading them."""
    archive = archived.views.farm.archive_root
    link = archive / SNAPSHOT / "index.html"
    target = os.readlink(link)
    link.unlink()
    os.symlink(target.removesuffix(alias_extension(link.name)), link)
    tab.goto(link.as_uri())
    expect(tab.locator("#headline")).to_have_count(0)
    expect(tab.locator("body")).to_contain_text('<h1 id="headline">')  # the source, as text

    fixed = verify_storage(archived.catalog, archived.primary, archived.views, fix=True)
    assert fixed.fixed["wrong_links"] == 1 and fixed.problems == 0
    tab.goto(link.as_uri())
    expect(tab).to_have_title(TITLE)
    expect(tab.locator("#headline")).to_be_visible()
