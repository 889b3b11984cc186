"""A real crawl of the test web, ingested, exported as WARC 1.1: read back by warcio's own
`warcio check` (every digest checked) and ArchiveIterator; every response's payload is its
blob's bytes; the (URI, date, payload digest) of the records are the catalog's captures; the
headers describe the payload; revisits point at a response written before; the self-contained
export has every body in full."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import select
from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.captures.segment_ingest import ingest_crawl
from archive_pipelines.catalog import CaptureScope
from archive_pipelines.catalog.models import PageFetch
from archive_pipelines.storage.assembly import StorageParts
from archive_pipelines.warc.exporter import ExportReport, export_file
from archive_pipelines.warc.payloads import sha256_digest
from archive_pipelines.warc.warc_info import WarcInfo, warc_date
from tests.helpers.captures import capture_primary, open_parts
from tests.helpers.crawls import Crawled

EMPTY = hashlib.sha256(b"").hexdigest()


@dataclass
class Exported:
    parts: StorageParts
    data_dir: Path
    warc: Path
    report: ExportReport
    full: Path
    full_report: ExportReport


@pytest.fixture(scope="module")
def exported(crawled: Crawled, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    """The crawl ingested into a copy, exported deduplicated and self-contained."""
    root = tmp_path_factory.mktemp("export")
    data_dir = root / "data"
    shutil.copytree(crawled.data_dir, data_dir, symlinks=True)
    with open_parts(data_dir) as parts:
        ingested = ingest_crawl(parts.catalog, capture_primary(parts), data_dir)
        assert ingested.ingested and not ingested.failed
        runs = {}
        for name, whole in (("dedup", False), ("full", True)):
            path = root / f"{name}.warc.gz"
            runs[name] = (path, export_file(
                path, catalog=parts.catalog, store=parts.primary.store, data_dir=data_dir,
                scope=CaptureScope(), info=WarcInfo(operator="tests", self_contained=whole)))
        try:
            yield Exported(parts, data_dir, runs["dedup"][0], runs["dedup"][1], runs["full"][0],
                           runs["full"][1])
        finally:
            parts.catalog.engine.dispose()


def _records(path: Path) -> list[tuple[str, dict[str, str], object, bytes]]:
    """(type, WARC headers, HTTP headers, raw payload) of every record, digests checked."""
    found = []
    with open(path, "rb") as handle:
        for record in ArchiveIterator(handle, check_digests="raise"):
            payload = record.raw_stream.read()
            found.append((record.rec_type, dict(record.rec_headers.headers), record.http_headers,
                          payload))
    return found


def _captures(exported: Exported) -> list[PageFetch]:
    with exported.parts.catalog.reading() as tx:
        return list(tx.session.scalars(select(PageFetch).order_by(PageFetch.id)))


def test_warcio_check_passes_with_every_digest_checked(exported: Exported) -> None:
    """`warcio check -v` reads every record and checks each digest it finds: every record
    but the revisits (whose payload lies elsewhere) says `digest pass`."""
    for path, report in ((exported.warc, exported.report), (exported.full, exported.full_report)):
        run = subprocess.run([str(Path(sys.executable).with_name("warcio")), "check", "-v",
                              str(path)], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr
        verdicts = Counter(line.strip() for line in run.stdout.splitlines()
                           if line.startswith("    "))
        assert verdicts == Counter({"digest pass": report.records - report.revisits,
                                    **({"digest present but not checked (revisit)":
                                        report.revisits} if report.revisits else {})})


def test_every_response_payload_is_its_blobs_bytes(exported: Exported) -> None:
    store = exported.parts.primary.store
    responses = 0
    for kind, headers, _http, payload in _records(exported.warc):
        if kind != "response":
            continue
        responses += 1
        sha = hashlib.sha256(payload).hexdigest()
        assert headers["WARC-Payload-Digest"] == sha256_digest(sha)
        if sha != EMPTY:
            with store.open(sha) as blob:
                assert blob.read() == payload
    assert responses == exported.report.responses > 0


def test_the_records_are_the_catalogs_captures(exported: Exported) -> None:
    """(URI, date, payload digest) of responses and revisits = the captures with a response;
    the failed fetches are metadata records with their error."""
    expected = Counter()
    failed = Counter()
    for row in _captures(exported):
        if row.status_code is None:
            failed[(row.url, warc_date(row.fetched_ms))] += 1
            continue
        body = row.body_sha256 if row.kind != "redirect" and row.body_sha256 else EMPTY
        expected[(row.url, warc_date(row.fetched_ms), sha256_digest(body))] += 1
    for path in (exported.warc, exported.full):
        got = Counter()
        errors = Counter()
        for kind, headers, _http, payload in _records(path):
            if kind in ("response", "revisit"):
                got[(headers["WARC-Target-URI"], headers["WARC-Date"],
                     headers["WARC-Payload-Digest"])] += 1
            elif kind == "metadata" and b"fetch-error:" in payload:
                errors[(headers["WARC-Target-URI"], headers["WARC-Date"])] += 1
        assert got == expected
        assert errors == failed and sum(failed.values()) > 0


def test_headers_describe_the_payload(exported: Exported) -> None:
    originals = 0
    for kind, _headers, http, payload in _records(exported.full):
        if kind != "response":
            continue
        assert http is not None
        assert http.get_header("Transfer-Encoding") is None
        assert http.get_header("Content-Encoding") is None  # the test web's bodies decode
        assert http.get_header("Content-Length") == str(len(payload))
        original = http.get_header("X-Original-Content-Length")
        assert original is None or original != str(len(payload))  # kept only when it differs
        originals += 1
    assert originals > 0


def test_a_revisit_refers_to_a_response_written_before(exported: Exported) -> None:
    seen: dict[str, tuple[str, str]] = {}
    revisits = 0
    for kind, headers, http, payload in _records(exported.warc):
        digest = headers.get("WARC-Payload-Digest")
        if kind == "response" and digest:
            seen.setdefault(digest, (headers["WARC-Target-URI"], headers["WARC-Date"]))
        if kind == "revisit":
            revisits += 1
            assert payload == b""
            assert headers["WARC-Profile"].endswith("/revisit/identical-payload-digest")
            assert seen[digest] == (headers["WARC-Refers-To-Target-URI"],
                                    headers["WARC-Refers-To-Date"])
            assert http is not None and http.statusline
    assert revisits == exported.report.revisits > 0
    full = Counter(kind for kind, *_ in _records(exported.full))
    assert full["revisit"] == 0
    assert full["response"] == exported.report.responses + exported.report.revisits
    assert exported.full.stat().st_size > exported.warc.stat().st_size


def test_requests_are_concurrent_to_their_responses(exported: Exported) -> None:
    records = _records(exported.warc)
    ids = {headers["WARC-Record-ID"]: kind for kind, headers, *_ in records}
    requests = [(headers, http) for kind, headers, http, _p in records if kind == "request"]
    assert len(requests) == exported.report.requests > 0
    for headers, http in requests:
        assert ids[headers["WARC-Concurrent-To"]] in ("response", "revisit")
        assert http.protocol == "GET" and http.get_header("Host")
    warcinfo = records[0]
    assert warcinfo[0] == "warcinfo" and b"operator: tests" in warcinfo[3]
    assert all(headers["WARC-Warcinfo-ID"] == warcinfo[1]["WARC-Record-ID"]
               for _kind, headers, *_ in records[1:])
