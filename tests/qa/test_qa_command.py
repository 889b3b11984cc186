"""`archive-pipelines captures qa URL [--at]` as a person runs it (a subprocess): the scores
and the missing resources printed, the check recorded and shown by `captures URL` beneath the
page; a URL with no browser capture exits 1 with a clear message."""

from __future__ import annotations

import json
from pathlib import Path

from archive_pipelines.replay.timestamps import timestamp_of
from archive_pipelines.settings import Settings
from archive_testkit.testweb.js_pages import FETCHED, FETCHED_JSON
from tests.helpers.captures import parts_of
from tests.helpers.cli import run_cli
from tests.qa.qa_crawls import browser_page, page_url


def test_qa_prints_the_scores_and_the_listing_shows_them(qa_data: Path) -> None:
    env = {"ARCHIVE_DATA_DIR": str(qa_data)}
    with parts_of(qa_data) as parts:
        page = browser_page(parts.catalog, FETCHED)
    ran = run_cli("captures", "qa", page_url(FETCHED), "--at", timestamp_of(page.fetched_ms), env=env)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == f"{page.url} captured at {timestamp_of(page.fetched_ms)} (capture {page.id})"
    assert "  score      1.0000" in lines
    assert "  resources  5/5 replayed from the archive" in lines
    assert "  leaks      0" in lines
    assert not any(line.startswith("  missing") for line in lines)

    listed = run_cli("captures", page_url(FETCHED), env=env)
    assert listed.returncode == 0, listed.stderr
    [qa_line] = [line for line in listed.stdout.splitlines() if "QA score" in line]
    assert "1.000  (pixels 1.000, resources 5/5, leaks 0; checked " in qa_line
    as_json = json.loads(run_cli("captures", page_url(FETCHED), "--json", env=env).stdout)
    [row] = [row for row in as_json["captures"] if row["id"] == page.id]
    assert row["qa"]["score"] == 1.0 and row["qa"]["missing"] == []


def test_a_lost_resource_is_listed_as_missing(qa_data: Path) -> None:
    settings = Settings(data_dir=qa_data)
    with parts_of(qa_data) as parts:
        with parts.catalog.reading() as tx:
            lost = next(c for c in tx.captures.captures_by_url(_hash(page_url(FETCHED_JSON)))
                        if c.kind == "request")
        assert lost.body_sha256 is not None
        assert parts.primary.store.delete(lost.body_sha256)
    ran = run_cli("captures", "qa", page_url(FETCHED), env={"ARCHIVE_DATA_DIR": str(settings.data_dir)})
    assert ran.returncode == 0, ran.stderr
    assert f"  missing    {page_url(FETCHED_JSON)}" in ran.stdout.splitlines()
    assert "(under the threshold 0.9)" in ran.stdout


def test_a_url_without_a_browser_capture_exits_1_saying_so(qa_data: Path) -> None:
    env = {"ARCHIVE_DATA_DIR": str(qa_data)}
    ran = run_cli("captures", "qa", page_url(FETCHED_JSON), env=env)  # fetched, not rendered
    assert ran.returncode == 1
    assert "has no browser capture" in ran.stderr and "--browser" in ran.stderr
    assert run_cli("captures", "qa", "http://nowhere.test/", env=env).returncode == 1
    bad = run_cli("captures", "qa", "not a url", env=env)
    assert bad.returncode == 2 and "not an http(s) URL" in bad.stderr


def _hash(url: str) -> str:
    import hashlib

    from archive_pipelines.canonical_urls import canonicalize

    return hashlib.sha256(canonicalize(url).encode()).hexdigest()
