"""The parallel export (worker processes, parts appended in order) writes what the export in
one process writes: the same records (type, URI, date, payload digest, revisit targets), one
warcinfo record first, every revisit referring to a response of the file by record id, and
offsets that an index built from the parts' sidecars finds the records at."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from archive_pipelines.catalog import CaptureScope
from archive_pipelines.settings import Settings
from archive_pipelines.warc.export_parts import export_parallel
from archive_pipelines.warc.exporter import ExportSinks, WrittenRecord, export_file
from archive_pipelines.warc.warc_info import WarcInfo
from tests.helpers.captures import ingested_copy, open_parts
from tests.helpers.crawls import Crawled


@pytest.fixture(scope="module")
def data(crawled: Crawled, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield ingested_copy(crawled.data_dir, tmp_path_factory.mktemp("parallel") / "data")


def _read(path: Path) -> list[tuple[str, dict[str, str], int]]:
    with open(path, "rb") as handle:
        iterator = ArchiveIterator(handle, check_digests="raise")
        return [(record.rec_type, dict(record.rec_headers.headers), iterator.get_record_offset())
                for record in iterator]


def _shape(records: list[tuple[str, dict[str, str], int]]) -> Counter[tuple[str | None, ...]]:
    return Counter((kind, headers.get("WARC-Target-URI"), headers.get("WARC-Date"),
                    headers.get("WARC-Payload-Digest"), headers.get("WARC-Refers-To-Target-URI"),
                    headers.get("WARC-Refers-To-Date")) for kind, headers, _offset in records
                   if kind != "warcinfo")  # dated when written


def test_parts_in_processes_write_what_one_process_writes(data: Path, tmp_path: Path) -> None:
    heard: list[WrittenRecord] = []
    with open_parts(data) as parts:
        one = export_file(tmp_path / "one.warc.gz", catalog=parts.catalog,
                          store=parts.primary.store, data_dir=data, scope=CaptureScope(),
                          info=WarcInfo())
        many = export_parallel(tmp_path / "many.warc.gz", settings=Settings(data_dir=data),
                               catalog=parts.catalog, scope=CaptureScope(), info=WarcInfo(),
                               processes=2, sinks=ExportSinks(on_record=heard.append))
        parts.catalog.engine.dispose()
    assert (many.records, many.responses, many.revisits, many.captures) == (
        one.records, one.responses, one.revisits, one.captures)
    assert many.revisits > 0 and not many.problems
    single, parallel = _read(tmp_path / "one.warc.gz"), _read(tmp_path / "many.warc.gz")
    assert _shape(parallel) == _shape(single)
    assert parallel[0][0] == "warcinfo"
    warcinfo_id = parallel[0][1]["WARC-Record-ID"]
    ids = {headers["WARC-Record-ID"]: kind for kind, headers, _offset in parallel}
    for kind, headers, _offset in parallel[1:]:
        assert headers["WARC-Warcinfo-ID"] == warcinfo_id
        if kind == "revisit":  # refers to a response of this file, written by any part
            assert ids[headers["WARC-Refers-To"]] == "response"
    at = {offset: headers.get("WARC-Target-URI") for _kind, headers, offset in parallel}
    assert len(heard) == many.records - 1  # every record but the warcinfo
    assert all(at[record.offset] == record.uri for record in heard)
    assert (tmp_path / "many.warc.gz").stat().st_size == many.warc_bytes
    assert not list(tmp_path.glob(".many*"))  # no part or work folder left
