"""Round trip: a real crawl exported (deduplicated, and as a WACZ), imported into a fresh data
dir, exported again: the same (URI, date, payload digest) for every response and revisit, each
revisit resolved to its body; `captures` finds every URL; a rerun imports nothing twice;
`verify --deep` is healthy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.captures.segment_ingest import ingest_crawl
from archive_pipelines.catalog.models import PageFetch
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from tests.helpers.captures import capture_primary, open_parts
from tests.helpers.cli import CLI
from tests.helpers.crawls import Crawled


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR")}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=600)


def _triples(path: Path) -> Counter[tuple[str, str, str]]:
    """(URI, date, payload digest) of every response and revisit."""
    with open(path, "rb") as handle:
        return Counter((record.rec_headers.get_header("WARC-Target-URI"),
                        record.rec_headers.get_header("WARC-Date"),
                        record.rec_headers.get_header("WARC-Payload-Digest"))
                       for record in ArchiveIterator(handle)
                       if record.rec_type in ("response", "revisit"))


@pytest.fixture(scope="module")
def first_export(crawled: Crawled, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[tuple[Path, Path]]:
    """The crawl ingested and exported: (the WARC, the WACZ)."""
    root = tmp_path_factory.mktemp("roundtrip")
    data = root / "crawl"
    shutil.copytree(crawled.data_dir, data, symlinks=True)
    with open_parts(data) as parts:
        assert not ingest_crawl(parts.catalog, capture_primary(parts), data).failed
        parts.catalog.engine.dispose()
    warc, wacz = root / "first.warc.gz", root / "first.wacz"
    for args in ([str(warc)], ["--wacz", str(wacz)]):
        run = _cli("--data-dir", str(data), "export-warc", *args)
        assert run.returncode == 0, run.stderr
    yield warc, wacz


@pytest.mark.parametrize("which", ["warc", "wacz"])
def test_export_import_export_keeps_every_capture(first_export: tuple[Path, Path],
                                                   tmp_path: Path, which: str) -> None:
    warc, wacz = first_export
    data = tmp_path / "data"
    initialize(Settings(data_dir=data))
    source = warc if which == "warc" else wacz
    run = _cli("--data-dir", str(data), "import-warc", "--json", str(source))
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["unresolved_revisits"] == 0
    with open_parts(data) as parts, parts.catalog.reading() as tx:  # a fresh store: every body new
        bodies = tx.session.execute(select(PageFetch.body_sha256, PageFetch.body_size)
                                    .where(PageFetch.body_sha256.is_not(None)).distinct()).all()
        parts.catalog.engine.dispose()
    assert report["new_bodies"] == len(bodies) and report["new_body_bytes"] == sum(
        size for _sha, size in bodies)
    again = tmp_path / "again.warc.gz"
    run = _cli("--data-dir", str(data), "export-warc", str(again))
    assert run.returncode == 0, run.stdout + run.stderr
    before, after = _triples(warc), _triples(again)
    assert sum(before.values()) > 500
    assert after == before
    with open(again, "rb") as handle:
        kinds = Counter(record.rec_type for record in ArchiveIterator(handle, check_digests="raise"))
    assert kinds["revisit"] > 0 and kinds["response"] > 0

    rerun = _cli("--data-dir", str(data), "import-warc", "--json", str(source))
    assert rerun.returncode == 0, rerun.stderr
    assert '"captures": 0' in rerun.stdout and '"files_done_before": 1' in rerun.stdout
    verify = _cli("--data-dir", str(data), "verify", "--deep")
    assert verify.returncode == 0 and "healthy" in verify.stdout, verify.stdout
    some = next(iter(before))[0]
    found = _cli("--data-dir", str(data), "captures", some)
    assert found.returncode == 0 and some in found.stdout


def test_an_imported_body_shares_the_blob_of_the_same_crawled_body(
        first_export: tuple[Path, Path], crawl_data: Path) -> None:
    """Importing our own export into the crawl's data dir adds captures but no body bytes:
    every payload was already stored (the store's form is the decoded body either way; the
    empty body of the redirect responses, which a crawl never stores, is the one new blob)."""
    with open_parts(crawl_data) as parts:
        assert not ingest_crawl(parts.catalog, capture_primary(parts), crawl_data).failed
        parts.catalog.engine.dispose()
    run = _cli("--data-dir", str(crawl_data), "import-warc", "--json", str(first_export[0]))
    assert run.returncode == 0, run.stderr
    assert '"new_body_bytes": 0' in run.stdout
    assert '"captures": 0' not in run.stdout
