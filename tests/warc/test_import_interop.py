"""WARCs of third-party writers imported: Debian's real `wget --warc-file --page-requisites
--recursive` against a site of the test web (through it as an HTTP proxy), and warcio's own
writer with revisit records, in each layout (gzip per record, whole-file gzip, plain).
`captures` finds every URL they hold, each body's sha256 equal to the payload's (decoded)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive_pipelines.catalog.models import PageFetch
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_testkit.revisit_warcs import (
    UNRESOLVABLE_BODY,
    UNRESOLVABLE_REFERS_TO,
    UNRESOLVABLE_URL,
    write_revisit_warc,
)
from archive_testkit.testweb import TestWeb, TestWebConfig, serve_in_background
from archive_testkit.warc_variants import write_warc_variants
from archive_testkit.wget_warcs import wget_crawl
from tests.helpers.captures import open_parts
from tests.helpers.cli import CLI

WEB = TestWebConfig(seed=29, hosts=4, pages_per_host=30, links_per_page=8, page_min_bytes=2_000,
                    page_max_bytes=5_000, special_fraction=0.0, trap_fraction=0.0,
                    dead_fraction=0.0, crawl_delay_fraction=0.0, robots_fraction=0.0)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR")}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=600)


def _fresh(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    initialize(Settings(data_dir=data))
    return data


def _captures(data: Path) -> list[tuple[str, str, int | None, str | None, str | None]]:
    """(kind, url, status, body sha256, error) of every capture."""
    with open_parts(data) as parts, parts.catalog.reading() as tx:
        rows = tx.session.execute(select(PageFetch.kind, PageFetch.url, PageFetch.status_code,
                                         PageFetch.body_sha256, PageFetch.error)).all()
        parts.catalog.engine.dispose()
    return [tuple(row) for row in rows]  # type: ignore[misc]


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    with serve_in_background(WEB) as running:
        yield running


def test_a_wget_warc_is_imported_and_every_url_found(web: TestWeb, tmp_path: Path) -> None:
    crawl = wget_crawl("http://site0001.test/", tmp_path / "wget", proxy=f"127.0.0.1:{web.port}",
                       recursive_depth=1)
    assert len(crawl.responses) >= 8
    data = _fresh(tmp_path)
    run = _cli("--data-dir", str(data), "import-warc", str(crawl.warc))
    assert run.returncode == 0, run.stdout + run.stderr
    held = {(url, sha) for _kind, url, _status, sha, _error in _captures(data)}
    for fetched in crawl.responses:
        assert (fetched.url, fetched.decoded_sha256) in held, fetched.url
        found = _cli("--data-dir", str(data), "captures", fetched.url, "--json")
        assert found.returncode == 0, found.stderr
        [capture] = json.loads(found.stdout)["captures"]
        assert capture["body_sha256"] == fetched.decoded_sha256
        assert capture["status_code"] == fetched.status
    verify = _cli("--data-dir", str(data), "verify", "--deep")
    assert verify.returncode == 0, verify.stdout


@pytest.mark.parametrize("layout", ["per-record-gzip", "whole-gzip", "plain"])
def test_warcio_revisits_resolve_in_every_layout(tmp_path: Path, layout: str) -> None:
    """Each revisit resolves to the body of the response it names; the one that names a
    capture the file does not hold is reported (exit 1), not dropped."""
    variants = write_warc_variants(tmp_path / "variants")
    written = write_revisit_warc(tmp_path / "reference.warc.gz")
    data = _fresh(tmp_path)
    run = _cli("--data-dir", str(data), "import-warc", str(variants[layout]))
    assert run.returncode == 1, run.stdout + run.stderr
    assert UNRESOLVABLE_REFERS_TO[0] in run.stderr and "offset" in run.stderr
    captures = _captures(data)
    by_url: dict[str, set[str | None]] = {}
    for _kind, url, _status, sha, _error in captures:
        by_url.setdefault(url, set()).add(sha)
    for record in written.records:
        if record.url == UNRESOLVABLE_URL:
            continue
        assert record.payload_sha256 in by_url[record.url], record
    [unresolved] = [c for c in captures if c[1] == UNRESOLVABLE_URL]
    assert unresolved[2] is None and "unresolved revisit" in (unresolved[4] or "")
    assert len(captures) == len(written.records)


def test_a_revisit_resolves_against_a_body_already_in_the_store(tmp_path: Path) -> None:
    """The unresolvable revisit's body, once stored by an earlier import under the URL and
    date it names, resolves on the next import."""
    earlier = tmp_path / "earlier.warc.gz"
    with open(earlier, "wb") as handle:
        writer = WARCWriter(handle, gzip=True, warc_version="1.1")
        http = StatusAndHeaders("200 OK", [("Content-Type", "image/png")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(
            UNRESOLVABLE_REFERS_TO[0], "response", payload=io.BytesIO(UNRESOLVABLE_BODY),
            length=len(UNRESOLVABLE_BODY), http_headers=http,
            warc_headers_dict={"WARC-Date": UNRESOLVABLE_REFERS_TO[1]}))
    data = _fresh(tmp_path)
    assert _cli("--data-dir", str(data), "import-warc", str(earlier)).returncode == 0
    written = write_revisit_warc(tmp_path / "revisits.warc.gz")
    run = _cli("--data-dir", str(data), "import-warc", str(written.path))
    assert run.returncode == 0, run.stdout + run.stderr
    body = hashlib.sha256(UNRESOLVABLE_BODY).hexdigest()
    assert any(c[1] == UNRESOLVABLE_URL and c[3] == body for c in _captures(data))
