"""A large WARC read by worker processes in spans (`import_spans`) imports exactly as one read
in the calling process: the same captures, ledger, blobs and ref counts, the same store files.
Spans are made tiny here so that a small file is cut many times; a WARC whose payload is a WARC
(false record starts inside it) and a broken gzip member make cuts that must be read again."""

from __future__ import annotations

import gzip
import itertools
import os
import subprocess
import sys
import time
import zlib
from io import BytesIO
from pathlib import Path

import psutil
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archive_pipelines.captures.segment_ingest import CapturePrimary
from archive_pipelines.datadir import initialize
from archive_pipelines.settings import Settings
from archive_pipelines.storage.assembly import open_storage
from archive_pipelines.warc import import_spans
from archive_pipelines.warc.import_run import run_import
from archive_pipelines.warc.importer import ImportReport, ImportTarget
from tests.helpers.import_crashes import import_state, write_crash_warc
from tests.helpers.ingest_crashes import ROOT, store_files

SPAN = 2048  # bytes: the crash WARC's ~80 records fall into dozens of spans


def _import(data_dir: Path, warc: Path, *, processes: int) -> ImportReport:
    initialize(Settings(data_dir=data_dir))
    settings = Settings(data_dir=data_dir, imports={"processes": processes})
    with open_storage(settings) as parts:
        target = ImportTarget(parts.catalog, CapturePrimary(
            parts.primary.store, parts.primary.store_id, parts.views.farm, parts.views.crawl),
            data_dir, settings=settings)
        report = run_import([warc], target=target)
    parts.catalog.engine.dispose()
    return report


@pytest.fixture
def tiny_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(import_spans, "SPAN_BYTES", SPAN)
    monkeypatch.setattr(import_spans, "MIN_PARALLEL_BYTES", 0)


def _same_import(tmp_path: Path, warc: Path, *, false_cuts: bool = False
                 ) -> tuple[ImportReport, ImportReport]:
    """Import `warc` alone and in spans; the catalogs equal, the stores too but (with
    `false_cuts`) for the blobs a span read from a false start stored: no row refers to them
    (`gc` collects them)."""
    serial = _import(tmp_path / "serial", warc, processes=1)
    parallel = _import(tmp_path / "parallel", warc, processes=2)
    state = import_state(tmp_path / "parallel")
    assert state == import_state(tmp_path / "serial")
    files, expected = store_files(tmp_path / "parallel"), store_files(tmp_path / "serial")
    if false_cuts:
        extra = {path.rsplit("/", 1)[1] for path in set(files) - set(expected)
                 if path.startswith("cas/sha256/")}
        assert extra and not extra & {dict(row)["sha256"] for row in state["blob"]}
        files = {path: size for path, size in files.items() if path in expected}
    assert files == expected
    assert ({**parallel.counts(), "reread_spans": 0} == serial.counts())  # spans: parallel only
    assert parallel.problems == serial.problems
    return serial, parallel


def test_a_file_read_in_spans_by_two_processes_imports_as_one_read_alone(
        tmp_path: Path, tiny_spans: None) -> None:
    warc = tmp_path / "crash.warc.gz"
    write_crash_warc(warc)
    assert warc.stat().st_size > 10 * SPAN
    serial, parallel = _same_import(tmp_path, warc)
    assert serial.revisits >= 15 and serial.unresolved_revisits == 0
    assert parallel.new_bodies == serial.new_bodies > 0


def _warc_inside_a_warc(path: Path, inner: bytes) -> None:
    """A plain WARC whose middle response's payload is the plain WARC `inner` (its `WARC/1.1`
    lines look like record starts to a cut), between ordinary responses."""
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=False, warc_version="1.1")
        for number, (body, mime) in enumerate([(b"before " * 500, "text/plain"),
                                               (inner, "application/warc"),
                                               (b"after " * 500, "text/plain")]):
            http = StatusAndHeaders("200 OK", [("Content-Type", mime),
                                               ("Content-Length", str(len(body)))],
                                    protocol="HTTP/1.1")
            record = writer.create_warc_record(f"http://nested.test/{number}", "response",
                                               payload=BytesIO(body), http_headers=http)
            writer.write_record(record)
            record.raw_stream.close()  # warcio's buffer for a record made without a length


def test_false_record_starts_inside_a_payload_are_read_again_not_imported(
        tmp_path: Path, tiny_spans: None) -> None:
    inner = tmp_path / "inner.warc.gz"
    write_crash_warc(inner)
    warc = tmp_path / "outer.warc"
    _warc_inside_a_warc(warc, gzip.decompress(inner.read_bytes()))
    serial, parallel = _same_import(tmp_path, warc, false_cuts=True)
    assert (serial.records, serial.captures, serial.broken_spans) == (3, 3, 0)
    assert parallel.reread_spans > 0  # cuts fell on the inner WARC's records


ARC_LINE = b" 127.0.0.1 20260101000000 text/plain 1\n"


def _member_starts(data: bytes) -> list[int]:
    """The offset of each gzip member of `data` (a WARC of one member per record)."""
    starts, offset = [], 0
    while offset < len(data):
        starts.append(offset)
        member = zlib.decompressobj(wbits=31)
        member.decompress(data[offset:])
        offset = len(data) - len(member.unused_data)
    return starts


@pytest.mark.parametrize("where", ["inside a span", "first after a cut"])
def test_a_broken_member_between_spans_is_reported_as_when_read_alone(
        where: str, tmp_path: Path, tiny_spans: None) -> None:
    """`first after a cut`: the span before the cut stops at the broken member and the next
    one begins after it, so that span is read again in the calling process. Read again from
    the broken member itself, warcio read it otherwise (a record refused, then a stretch, in
    other words) than a reading that comes upon it after a record; and the bodies the
    thrown-away read stored were not counted as new (CI, 2026-11-28: 30 of 32)."""
    warc = tmp_path / "crash.warc.gz"
    write_crash_warc(warc)
    data = bytearray(warc.read_bytes())
    members = _member_starts(bytes(data))
    # (a member in the second half, the one before it) where the member's first bytes hold no
    # space or line feed (the line below then reads as one header of five fields)
    pairs = [(start, before) for before, start in itertools.pairwise(members)
             if start > len(data) // 2 and not {0x20, 0x0A} & set(data[start:start + 20])]
    if where == "inside a span":  # the member before it begins in the same span
        broken = next(start for start, before in pairs if start // SPAN == before // SPAN)
    else:
        broken = next(start for start, before in pairs if start // SPAN > before // SPAN)
    # The member's deflate stream destroyed by a line that, read as plain bytes (as warcio
    # reads a member it cannot inflate when a reading begins there), is an ARC header.
    data[broken + 20:broken + 60] = ARC_LINE.ljust(40, b"\x00")
    path = tmp_path / "broken.warc.gz"
    path.write_bytes(bytes(data))
    serial, parallel = _same_import(tmp_path, path)
    assert serial.broken_spans == 1 and serial.new_bodies > 0
    assert parallel.reread_spans == (where == "first after a cut")


def test_the_workers_of_a_killed_import_exit_with_it(tmp_path: Path) -> None:
    """kill -9 of an import reading in parallel leaves no worker behind: each exits once its
    parent is gone (a watchdog), instead of waiting forever on the pool's queue."""
    one = tmp_path / "one.warc.gz"
    write_crash_warc(one)
    warc = tmp_path / "many.warc.gz"
    warc.write_bytes(one.read_bytes() * 30)  # members concatenated: a longer import
    data_dir = tmp_path / "data"
    initialize(Settings(data_dir=data_dir))
    toml = data_dir / "archive.toml"
    head, tail = toml.read_text().split("\n[import]\n", 1)
    toml.write_text(head + "\n[import]\n" + tail.replace('processes = "auto"', "processes = 2", 1))
    env = {**os.environ, "CRASH_IMPORT_SPAN_BYTES": "2048"}
    command = [sys.executable, "-m", "tests.warc.crash_import", "6", "none", "0",
               "--data-dir", str(data_dir), "import-warc", str(warc)]
    importer = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    try:
        parent = psutil.Process(importer.pid)
        workers: list[psutil.Process] = []
        deadline = time.monotonic() + 60
        while not workers and importer.poll() is None and time.monotonic() < deadline:
            workers = [child for child in parent.children(recursive=True)
                       if "spawn_main" in " ".join(child.cmdline())]
            time.sleep(0.05)
        assert workers, "the import started no worker (or ended first)"
        importer.kill()
        importer.wait(10)
        _gone, alive = psutil.wait_procs(workers, timeout=5)
        assert not alive, [worker.pid for worker in alive]
    finally:
        importer.kill()
