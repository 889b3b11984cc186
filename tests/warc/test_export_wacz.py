"""`export-warc --wacz` of a real crawl, read by third-party tools: `wacz validate` accepts the
package; `cdxj-indexer` over the WARC inside lists the same records (URLs, dates, digests,
offsets) as our own CDXJ index; the page list names every page with a response. And the
scopes: a URL prefix, a time window and a session export exactly their captures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.catalog import CaptureScope
from archive_pipelines.catalog.models import PageFetch
from archive_pipelines.warc.warc_info import warc_date
from tests.helpers.captures import ingested_copy, open_parts
from tests.helpers.cli import CLI
from tests.helpers.crawls import Crawled

BIN = Path(sys.executable).parent


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR")}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def ingested(crawled: Crawled, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield ingested_copy(crawled.data_dir, tmp_path_factory.mktemp("wacz") / "data")


@pytest.fixture(scope="module")
def wacz(ingested: Path) -> Path:
    out = ingested.parent / "crawl.wacz"
    run = _cli("--data-dir", str(ingested), "export-warc", "--wacz", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"WACZ: {out}" in run.stdout
    assert not list(ingested.parent.glob(".crawl.wacz*"))  # no work folder or part file left
    return out


def test_wacz_validate_accepts_the_export(wacz: Path) -> None:
    done = subprocess.run([str(BIN / "wacz"), "validate", "-f", str(wacz)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation succeeded, the passed WACZ is valid" in done.stdout


def test_cdxj_indexer_lists_what_our_index_lists(wacz: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(wacz) as package:
        names = package.namelist()
        ours = package.read("indexes/index.cdxj").decode().splitlines()
        warc_name = next(name for name in names if name.startswith("archive/"))
        package.extract(warc_name, tmp_path)
    assert set(names) == {warc_name, "indexes/index.cdxj", "pages/pages.jsonl",
                          "datapackage.json", "datapackage-digest.json"}
    warc = tmp_path / warc_name
    theirs = subprocess.run([str(BIN / "cdxj-indexer"), "--sort", warc.name], capture_output=True,
                            text=True, timeout=300, check=True, cwd=warc.parent).stdout.splitlines()
    assert len(ours) > 100
    assert ours == theirs


def test_the_page_list_names_every_page_with_a_response(wacz: Path, ingested: Path) -> None:
    with zipfile.ZipFile(wacz) as package:
        lines = package.read("pages/pages.jsonl").decode().splitlines()
    header, *pages = (json.loads(line) for line in lines)
    assert header["format"] == "json-pages-1.0"
    with open_parts(ingested) as parts:
        expected = sorted(capture.url for capture in parts.catalog.exports.page_in_scope(
            CaptureScope(), after_id=0, limit=100_000)
            if capture.kind == "page" and capture.status_code is not None)
        parts.catalog.engine.dispose()
    assert sorted(page["url"] for page in pages) == expected
    with open_parts(ingested) as parts, parts.catalog.reading() as tx:
        titles = dict(tx.session.execute(select(PageFetch.url, PageFetch.title).where(
            PageFetch.kind == "page", PageFetch.status_code.is_not(None))).all())
        parts.catalog.engine.dispose()
    assert {page["url"]: page.get("title") for page in pages} == titles
    assert sum(title is not None for title in titles.values()) > 50  # the test web's <title>s


def _exported(path: Path) -> set[tuple[str, str]]:
    with open(path, "rb") as handle:
        return {(record.rec_headers.get_header("WARC-Target-URI"),
                 record.rec_headers.get_header("WARC-Date"))
                for record in ArchiveIterator(handle)
                if record.rec_type in ("response", "revisit")}


def test_scopes_export_exactly_their_captures(ingested: Path, tmp_path: Path) -> None:
    with open_parts(ingested) as parts:
        every = parts.catalog.exports.page_in_scope(CaptureScope(), after_id=0, limit=100_000)
        parts.catalog.engine.dispose()
    answered = [c for c in every if c.status_code is not None]
    site = answered[0].url.split("/", 3)[:3]
    prefix = "/".join(site)
    times = sorted(c.fetched_ms for c in answered)
    middle = times[len(times) // 2]
    session = answered[0].session_id
    cases = {
        "prefix": (["--url-prefix", prefix], {c for c in answered if c.url.startswith(prefix + "/")}),
        "window": (["--from", f"{middle / 1000:.3f}"], {c for c in answered if c.fetched_ms >= middle}),
        "session": (["--session", session[:8]], {c for c in answered if c.session_id == session}),
    }
    for name, (args, chosen) in cases.items():
        out = tmp_path / f"{name}.warc.gz"
        run = _cli("--data-dir", str(ingested), "export-warc", *args, str(out))
        assert run.returncode == 0, run.stdout + run.stderr
        assert _exported(out) == {(c.url, warc_date(c.fetched_ms)) for c in chosen}, name
        assert 0 < len(chosen) <= len(answered)
