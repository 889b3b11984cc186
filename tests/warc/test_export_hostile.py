"""Hostile catalog states: a capture whose blob is missing (reported, skipped, exit 1, the rest
written), a 100 KB URL (written and read back), a 2 GB body (streamed: the exporting process
stays small), a bad output path (refused before any work)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.captures.segment_ingest import ingest_crawl
from archive_pipelines.catalog import CaptureScope
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_pipelines.warc.exporter import export_file
from archive_pipelines.warc.warc_info import WarcInfo
from tests.helpers.captures import capture_primary, open_parts
from tests.helpers.cli import CLI
from tests.helpers.hostile_captures import add_blob_row, add_capture


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ARCHIVE_DATA_DIR")}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=300)


def _records(path: Path) -> list[tuple[str, str]]:
    with open(path, "rb") as handle:
        return [(record.rec_type, record.rec_headers.get_header("WARC-Target-URI") or "")
                for record in ArchiveIterator(handle, check_digests="raise")
                if record.content_stream().read(0) == b""]


def test_a_missing_blob_is_reported_and_skipped_and_the_rest_written(crawl_data: Path,
                                                                     tmp_path: Path) -> None:
    with open_parts(crawl_data) as parts:
        assert not ingest_crawl(parts.catalog, capture_primary(parts), crawl_data).failed
        whole = export_file(tmp_path / "whole.warc.gz", catalog=parts.catalog,
                            store=parts.primary.store, data_dir=crawl_data,
                            scope=CaptureScope(), info=WarcInfo(self_contained=True))
        victim = next(capture for capture in parts.catalog.exports.page_in_scope(
            CaptureScope(), after_id=0, limit=10_000)
            if capture.kind == "page" and capture.stored and (capture.body_size or 0) > 0)
        blob = parts.primary.store.local_path(victim.body_sha256 or "")
        parts.catalog.engine.dispose()
    assert blob is not None
    uses = sum(1 for c in parts.catalog.exports.page_in_scope(CaptureScope(), after_id=0,
                                                              limit=10_000)
               if c.body_sha256 == victim.body_sha256)
    blob.unlink()
    out = tmp_path / "out.warc.gz"
    run = _cli("--data-dir", str(crawl_data), "export-warc", str(out), "--self-contained",
               "--json")
    assert run.returncode == 1, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["skipped"] == uses and len(report["problems"]) == uses
    assert victim.body_sha256 in report["problems"][0] and victim.url in report["problems"][0]
    assert report["responses"] == whole.responses - uses
    written = _records(out)
    assert sum(kind == "response" for kind, _uri in written) == whole.responses - uses
    assert out.exists()  # the rest is there to use


def test_a_100_kb_url_is_written_and_read_back(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    initialize(Settings(data_dir=data_dir))
    url = "http://hostile.test/" + "a" * 100_000
    body = b"a body under a very long URL\n"
    with open_parts(data_dir) as parts:
        put = parts.primary.store.put_bytes(body)
        blob_id = add_blob_row(parts.catalog, put.sha256, len(body))
        add_capture(parts.catalog, data_dir, url=url, body=(put.sha256, len(body)),
                    blob_id=blob_id)
        report = export_file(tmp_path / "long.warc.gz", catalog=parts.catalog,
                             store=parts.primary.store, data_dir=data_dir,
                             scope=CaptureScope(), info=WarcInfo())
        parts.catalog.engine.dispose()
    assert report.responses == 1 and not report.problems
    with open(tmp_path / "long.warc.gz", "rb") as handle:
        responses = [(record.rec_headers.get_header("WARC-Target-URI"),
                      record.content_stream().read())
                     for record in ArchiveIterator(handle, check_digests="raise")
                     if record.rec_type == "response"]
    assert responses == [(url, body)]


_EXPORT_2GB = """
import sys
from pathlib import Path
from archive_pipelines.catalog import CaptureScope
from archive_pipelines.warc.exporter import export_file
from archive_pipelines.warc.warc_info import WarcInfo
from tests.helpers.captures import open_parts
data_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
with open_parts(data_dir) as parts:
    report = export_file(out, catalog=parts.catalog, store=parts.primary.store,
                         data_dir=data_dir, scope=CaptureScope(), info=WarcInfo(), gzip_level=1)
# The peak of this process's own memory (VmHWM): ru_maxrss would carry over the peak of the
# process that forked it (Linux keeps it across exec), here a pytest worker's.
peak = next(int(line.split()[1]) for line in open("/proc/self/status")
            if line.startswith("VmHWM:"))
print(report.responses, report.payload_bytes, len(report.problems), peak)
"""


@pytest.mark.slow
def test_a_2_gb_body_is_streamed_with_memory_flat(tmp_path: Path) -> None:
    size = 2 * 1024 ** 3
    data_dir = tmp_path / "data"
    initialize(Settings(data_dir=data_dir))
    source = tmp_path / "big.bin"
    digest = hashlib.sha256()
    chunk = (b"0123456789abcdef" * 65_536)  # 1 MiB, compressible: the test stays quick
    with open(source, "wb") as handle:
        for _ in range(size // len(chunk)):
            handle.write(chunk)
            digest.update(chunk)
    with open_parts(data_dir) as parts:
        put = parts.primary.store.put_file(source, allow_hardlink=True)
        assert put.sha256 == digest.hexdigest() and put.size == size
        blob_id = add_blob_row(parts.catalog, put.sha256, size)
        add_capture(parts.catalog, data_dir, url="http://hostile.test/big.bin",
                    body=(put.sha256, size), blob_id=blob_id)
        parts.catalog.engine.dispose()
    out = tmp_path / "big.warc.gz"
    run = subprocess.run([sys.executable, "-c", _EXPORT_2GB, str(data_dir), str(out)],
                         capture_output=True, text=True, timeout=600,
                         cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 0, run.stderr
    responses, payload_bytes, problems, max_rss_kb = map(int, run.stdout.split())
    assert (responses, payload_bytes, problems) == (1, size, 0)
    print(f"peak RSS {max_rss_kb // 1024} MiB")
    assert max_rss_kb < 400 * 1024, f"peak RSS {max_rss_kb / 1024:.0f} MiB for a 2 GiB body"
    with open(out, "rb") as handle:
        for record in ArchiveIterator(handle, check_digests="raise"):
            if record.rec_type == "response":
                got = hashlib.sha256()
                while piece := record.raw_stream.read(1 << 20):
                    got.update(piece)
                assert got.hexdigest() == digest.hexdigest()


def test_a_bad_output_is_refused_before_any_work(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    initialize(Settings(data_dir=data_dir))
    for args, says in (
        (["out.warc"], "ending in .warc.gz"),
        (["out.warc.gz", "--wacz"], "ending in .wacz"),
        ([str(tmp_path / "missing" / "x.warc.gz")], "no such folder"),
        (["--url-prefix", "ftp://x/", "x.warc.gz"], "bad URL"),
        (["--from", "yesterday", "x.warc.gz"], "bad time"),
        (["--session", "not-a-session", "x.warc.gz"], "--session"),
    ):
        run = _cli("--data-dir", str(data_dir), "export-warc", *args)
        assert run.returncode != 0 and says in run.stderr, (args, run.stderr)
        assert "Traceback" not in run.stderr
    (tmp_path / "there.warc.gz").write_bytes(b"someone's file")
    run = _cli("--data-dir", str(data_dir), "export-warc", str(tmp_path / "there.warc.gz"))
    assert run.returncode != 0 and "exists" in run.stderr
    assert (tmp_path / "there.warc.gz").read_bytes() == b"someone's file"
