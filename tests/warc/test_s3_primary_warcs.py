"""WARC and WACZ files on an S3 primary (moto_server): `import-warc` stores each file as it is
and every body in the bucket (nothing local but spools, removed), a rerun imports nothing
twice, `captures URL --records` reads the record by ranged reads of the stored WARC, the
replay server serves every response byte for byte (two GETs a capture the first time; after
that none for a body it caches, one for a streamed one), and `export-warc` (WARC and WACZ)
writes what was imported, read back by warcio."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.blobstore import BlobStore, open_store
from archive_pipelines.catalog import CaptureScope, Catalog
from archive_pipelines.replay.exclusions import Exclusions
from archive_pipelines.replay.server import build_replayer
from archive_pipelines.settings import ReplaySettings, Settings
from archive_pipelines.warc import export_run
from archive_pipelines.warc.export_run import ExportRequest, run_export
from archive_testkit.hostile_waczs import valid_wacz
from archive_testkit.warc_files import WgetFetch, WgetRun, wget_warc
from archive_testkit.wget_warcs import FetchedPayload, read_wget_warc
from tests.helpers.cli import run_cli
from tests.helpers.replay import captures_of, fetch, memento_path, running_replay
from tests.helpers.s3_primary import s3_primary_data_dir

BIN = Path(sys.executable).parent
PAGE = "https://example.com/blog/"
RUN = WgetRun(arguments=("--warc-file=warc/1700000000", "--page-requisites", PAGE),
              started=datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC),
              warc_name="1700000000.warc.gz")
FETCHES = (
    WgetFetch(PAGE, b'<html><link href="/css/site.css"><img src="/big.bin"></html>\n',
              "text/html", "example.com/blog/index.html"),
    WgetFetch("https://example.com/css/site.css", b"body{margin:0}\n", "text/css",
              "example.com/css/site.css"),
    # Larger than the record window and than the replay's cached bodies: streamed.
    WgetFetch("https://example.com/big.bin", hashlib.sha512(b"x").digest() * 20_000,
              "application/octet-stream", "example.com/big.bin"),
)


@dataclass(frozen=True)
class Imported:
    settings: Settings
    warc: Path
    wacz: Path
    responses: list[FetchedPayload]
    reports: tuple[dict[str, object], dict[str, object]]  # of the WARC's import, the WACZ's


def _cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("--data-dir", str(data), *args)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def imported(s3_endpoint_url: str, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Imported]:
    """A WARC as wget writes it and a WACZ imported by the CLI into a data dir whose primary
    is a fresh bucket."""
    root = tmp_path_factory.mktemp("s3-warcs")
    with pytest.MonkeyPatch.context() as env:
        for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                            ("AWS_DEFAULT_REGION", "us-east-1")):
            env.setenv(name, value)
        bucket = f"bucket-{uuid.uuid4().hex[:12]}"
        boto3.client("s3", endpoint_url=s3_endpoint_url, region_name="us-east-1").create_bucket(
            Bucket=bucket)
        settings = s3_primary_data_dir(root / "data", endpoint_url=s3_endpoint_url,
                                       bucket=bucket)
        warc = root / "in" / "1700000000.warc.gz"
        warc.parent.mkdir()
        warc.write_bytes(wget_warc(RUN, FETCHES))
        wacz = valid_wacz(root / "in" / "valid.wacz").path
        run = _cli(settings.data_dir, "import-warc", "--json", str(warc))
        assert run.returncode == 0, run.stdout + run.stderr
        # The WACZ's WARC holds a revisit of a capture no file holds: reported, exit 1.
        again = _cli(settings.data_dir, "import-warc", "--json", str(wacz))
        assert again.returncode == 1, again.stdout + again.stderr
        yield Imported(settings, warc, wacz, read_wget_warc(warc)[0],
                       (json.loads(run.stdout), json.loads(again.stdout)))


def test_files_and_bodies_are_in_the_bucket(imported: Imported, replaying: Replaying) -> None:
    store = replaying.store
    warc_report, wacz_report = imported.reports
    assert warc_report["captures"] == 3 and warc_report["new_bodies"] == 3
    assert wacz_report["unresolved_revisits"] == 1
    assert wacz_report["refused"] == 0 and wacz_report["broken_spans"] == 0
    assert len(wacz_report["problems"]) == 1  # type: ignore[arg-type]
    inner = hashlib.sha256(valid_wacz(imported.wacz.with_name("check.wacz")).warc_bytes())
    for sha in (_sha256(imported.warc), _sha256(imported.wacz), inner.hexdigest(),
                *(r.decoded_sha256 for r in imported.responses)):
        assert store.exists(sha), sha
    data = imported.settings.data_dir
    leftovers = [p for p in (data / "tmp").rglob("*") if p.is_file()]
    assert not leftovers  # spools removed; no blob is kept on the local disk
    assert not (data / "store").exists()


def test_a_rerun_imports_nothing_twice(imported: Imported) -> None:
    run = _cli(imported.settings.data_dir, "import-warc", "--json", str(imported.warc))
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert (report["files_done_before"], report["records"], report["new_bodies"]) == (1, 0, 0)


def test_captures_finds_each_url_and_reads_its_record(imported: Imported) -> None:
    for response in imported.responses:
        run = _cli(imported.settings.data_dir, "captures", response.url, "--json", "--records")
        assert run.returncode == 0, run.stdout + run.stderr
        [row] = json.loads(run.stdout)["captures"]
        assert row["body_sha256"] == response.decoded_sha256
        recorded = row["record"]["requests"][0]["response"]
        assert recorded["status_code"] == 200, row["record"]
        assert dict(recorded["headers"])["Content-Length"] == str(row["body_size"])


@dataclass(frozen=True)
class Replaying:
    port: int
    catalog: Catalog
    store: BlobStore


@pytest.fixture(scope="module")
def replaying(imported: Imported) -> Iterator[Replaying]:
    """The replay server (in a thread, on a free port) over the catalog and the bucket."""
    settings = imported.settings
    store = open_store(settings.primary_store, settings.data_dir)
    catalog = Catalog.open(settings.catalog_url)
    try:
        replayer = build_replayer(ReplaySettings(), catalog=catalog, store=store,
                                  data_dir=settings.data_dir, withdrawn=Exclusions())
        with running_replay(replayer) as replay:
            yield Replaying(replay.port, catalog, store)
    finally:
        catalog.close()


def test_replay_serves_every_response_from_the_bucket(imported: Imported,
                                                      replaying: Replaying) -> None:
    store = replaying.store
    for response in imported.responses:
        [capture] = captures_of(replaying.catalog, response.url)
        store.take_request_counts()  # type: ignore[attr-defined]
        answer = fetch(replaying.port, memento_path(capture, "id_"))
        first = store.take_request_counts()  # type: ignore[attr-defined]
        assert answer.status == 200, answer.text
        assert hashlib.sha256(answer.body).hexdigest() == response.decoded_sha256
        # The record's headers: one ranged GET of the WARC; the body: one GET (a streamed
        # one's GET is its lookup too: a missing one is still a 404 page).
        assert first == {"GetObject": 2}, (response.url, first)
        again = fetch(replaying.port, memento_path(capture, "id_"))
        assert again.body == answer.body
        cached = store.take_request_counts()  # type: ignore[attr-defined]
        big = (capture.body_size or 0) > ReplaySettings().body_cache_item_bytes
        assert cached == ({"GetObject": 1} if big else {}), (response.url, cached)
        if big:  # a range of it: one GET, from the range's start
            part = fetch(replaying.port, memento_path(capture, "id_"),
                         headers={"Range": "bytes=1000-1999"})
            assert part.status == 206 and part.body == answer.body[1000:2000]
            assert store.take_request_counts() == {"GetObject": 1}  # type: ignore[attr-defined]
            assert capture.body_sha256 is not None
            store.delete(capture.body_sha256)  # gone from the bucket: an error page, not a cut
            try:
                gone = fetch(replaying.port, memento_path(capture, "id_"))
                assert gone.status == 404 and "missing from the store" in gone.text
            finally:
                store.put_bytes(FETCHES[2].body)


def test_the_page_its_index_and_its_timemap_replay(replaying: Replaying) -> None:
    [capture] = captures_of(replaying.catalog, PAGE)
    page = fetch(replaying.port, memento_path(capture))
    assert page.status == 200, page.text
    assert f"/web/{memento_path(capture)[5:19]}" in page.text  # its links rewritten
    rows = fetch(replaying.port, "/cdx/search/cdx?url=example.com/*&fl=original").text.split()
    assert sorted(rows) == sorted(f.url for f in FETCHES)
    timemap = fetch(replaying.port, f"/timemap/link/{PAGE}")
    assert timemap.status == 200 and memento_path(capture) in timemap.text
    asked = fetch(replaying.port, f"/web/{PAGE}",
                  headers={"Accept-Datetime": "Tue, 14 Nov 2023 22:13:20 GMT"})
    assert asked.status == 302 and memento_path(capture) in (asked.header("Location") or "")


def _payloads(warc: Path) -> dict[str, set[str]]:
    """The sha256 of every response's payload by URI, read by warcio (digests checked)."""
    payloads: dict[str, set[str]] = {}
    with open(warc, "rb") as handle:
        for record in ArchiveIterator(handle, check_digests="raise"):
            if record.rec_type == "response":
                uri = record.rec_headers.get_header("WARC-Target-URI")
                payloads.setdefault(uri, set()).add(
                    hashlib.sha256(record.content_stream().read()).hexdigest())
    return payloads


def test_export_writes_what_was_imported(imported: Imported, tmp_path: Path) -> None:
    data = imported.settings.data_dir
    out, package = tmp_path / "out.warc.gz", tmp_path / "out.wacz"
    for args in ([str(out)], ["--wacz", str(package)]):
        run = _cli(data, "export-warc", *args)
        assert run.returncode == 0, run.stdout + run.stderr
    payloads = _payloads(out)
    for response in imported.responses:
        assert payloads[response.url] == {response.decoded_sha256}
    done = subprocess.run([str(BIN / "wacz"), "validate", "-f", str(package)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_parallel_export_reads_the_bucket_from_each_worker(
        imported: Imported, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker processes open the S3 primary from the settings (credentials from the
    environment they inherit) and write the same records as one process."""
    monkeypatch.setattr(export_run, "PARALLEL_FROM", 0)
    settings = imported.settings
    store = open_store(settings.primary_store, settings.data_dir)
    catalog = Catalog.open(settings.catalog_url)
    try:
        outs = {}
        for processes in (1, 2):
            out = tmp_path / f"{processes}.warc.gz"
            run_export(ExportRequest(out=out, scope=CaptureScope(), processes=processes),
                       catalog=catalog, store=store, data_dir=settings.data_dir,
                       settings=settings)
            outs[processes] = _payloads(out)
    finally:
        catalog.close()
    assert outs[2] == outs[1] and len(outs[1]) >= len(imported.responses)
